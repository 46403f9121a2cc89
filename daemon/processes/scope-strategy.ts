/**
 * What a process scope does, whichever way it finds processes (process-scopes.ts picks one at
 * start): mark a unit's command, place its child, list the unit's members, release what is empty.
 * `cgroup-scope.ts` finds them by the unit's cgroup, `environ-scope.ts` by the marker in their
 * environment; `NoScope` finds nothing.
 */
import { readProcStat } from '../../shared/proc.js';
import type { CgroupTarget } from '../executor/spawn-messages.js';
import type { EnvMap } from '../runs/env.js';

/** How the processes of a unit are found. */
export type ScopeMode = 'cgroup' | 'environ' | 'none';

/** One process of a scope. */
export interface Member {
  pid: number;
  ppid: number;
  startTime: number;
  pgrp: number;
  sid: number;
}

/** One way of finding the processes of each session's units. */
export interface ScopeStrategy {
  readonly mode: ScopeMode;
  /** The cgroup hierarchy in use (`cgroup2`, `pids`, `freezer`), for the start-up log. */
  readonly hierarchy: string | undefined;
  /** How long an escaped-process count is reused, in ms (a count reads every unit, or all of /proc). */
  readonly countTtlMs: number;
  /** The variables a unit's command carries. */
  env(sessionId: string, unit: string): EnvMap;
  /** The cgroup a unit's child is born in (made now); undefined when there is none. */
  target(sessionId: string, unit: string): CgroupTarget | undefined;
  /** The live members a kill of a unit, of a session's units (no unit), or of every session (no id) reaches. */
  members(sessionId: string | undefined, unit?: string): Member[];
  /** The live members of every session, by `sessionKey`, for counts. */
  membersBySession(): Map<string, Member[]>;
  /** The key a session's members are counted under. */
  sessionKey(sessionId: string): string;
  /** Removes a unit's (or a session's) cgroup once empty; false when something is still in it. */
  release(sessionId: string, unit?: string): boolean;
  /** Removes every empty cgroup of the daemon's (at shutdown). */
  releaseAll(): void;
  /** Forgets a closed session. */
  forgetSession(sessionId: string): void;
  /** Tells the scope which session's tracked group each pid leads. */
  knowLeaders(leaderSession: (pid: number) => string | undefined): void;
}

/** The live (not zombie) members among `pids`, never the daemon's or its spawners' (`spared`). */
export function readMembers(pids: Iterable<number>, spared: ReadonlySet<number>): Member[] {
  const members: Member[] = [];
  for (const pid of new Set(pids)) {
    if (spared.has(pid)) continue;
    const stat = readProcStat(pid);
    if (!stat || stat.state === 'Z' || stat.state === 'X') continue;
    members.push({ pid, ppid: stat.ppid, startTime: stat.startTime, pgrp: stat.pgrp, sid: stat.session });
  }
  return members;
}

/** Scopes that find nothing: only process groups are killed and counted. */
export class NoScope implements ScopeStrategy {
  readonly mode = 'none';
  readonly hierarchy = undefined;
  readonly countTtlMs = 0;
  env(): EnvMap {
    return {};
  }
  target(): undefined {
    return undefined;
  }
  members(): Member[] {
    return [];
  }
  membersBySession(): Map<string, Member[]> {
    return new Map();
  }
  sessionKey(sessionId: string): string {
    return sessionId;
  }
  release(): boolean {
    return true;
  }
  releaseAll(): void {}
  forgetSession(): void {}
  knowLeaders(): void {}
}
