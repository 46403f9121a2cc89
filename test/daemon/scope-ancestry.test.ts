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

  it("kills an orphan only when it carries the unit's marker: another session's orphan moved in is spared", () => {
    const leader = member(501, DAEMON, CREATED);
    // Both re-parented to init after the unit was made: their ancestry says nothing of their unit.
    const own = member(502, 1, CREATED + 5);
    const ownChild = member(503, 502, CREATED + 6);
    const otherSessions = member(600, 1, CREATED + 7);
    const marked = (orphan: ScopedProcess) => orphan.pid === 502;
    const owned = ownedByUnit([leader, own, ownChild, otherSessions], SPAWNERS, CREATED, startOf, () => true, marked);
    expect(owned.map((m) => m.pid)).toEqual([501, 502, 503]);
    // The same holds for an orphan adopted by a reaper older than the unit.
    const reaper = 50;
    const adopted = member(601, reaper, CREATED + 8);
    const reaperStart = (pid: number) => (pid === reaper ? CREATED - 900 : undefined);
    expect(ownedByUnit([adopted], SPAWNERS, CREATED, reaperStart, () => true, marked)).toEqual([]);
    expect(
      ownedByUnit(
        [adopted],
        SPAWNERS,
        CREATED,
        reaperStart,
        () => true,
        () => true,
      ),
    ).toEqual([adopted]);
  });
});
