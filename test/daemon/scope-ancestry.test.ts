/** Which members of a unit's cgroup the daemon may kill (daemon/processes/scope-ancestry.ts): the pure rule. */
import { describe, expect, it } from 'vitest';
import { ownedByUnit, type ScopedProcess } from '../../daemon/processes/scope-ancestry.js';

const DAEMON = 100;
const SPAWNERS = new Set([DAEMON]);
const CREATED = 5_000;
const member = (pid: number, ppid: number, startTime: number): ScopedProcess => ({ pid, ppid, startTime });
const startOf = () => undefined;

describe('ownedByUnit', () => {
  it("kills the unit's leader and what descends from it, and spares what started before the unit", () => {
    const leader = member(201, DAEMON, CREATED);
    const child = member(202, 201, CREATED + 3);
    const older = member(300, 1, CREATED - 50);
    expect(ownedByUnit([leader, child, older], SPAWNERS, CREATED, startOf).map((m) => m.pid)).toEqual([201, 202]);
  });

  it("spares another session's leader moved in although it started in the tick before the unit was made", () => {
    // The unit's own leader is gone (its group was killed first); the moved-in one looks like it.
    const movedIn = member(401, DAEMON, CREATED - 1);
    const escaped = member(402, 1, CREATED + 2);
    const leads = (pid: number) => pid !== 401;
    expect(ownedByUnit([movedIn, escaped], SPAWNERS, CREATED, startOf, leads).map((m) => m.pid)).toEqual([402]);
    // Without knowing who leads what, the same tick cannot tell them apart: why the daemon says.
    expect(ownedByUnit([movedIn, escaped], SPAWNERS, CREATED, startOf).map((m) => m.pid)).toEqual([401, 402]);
  });
});
