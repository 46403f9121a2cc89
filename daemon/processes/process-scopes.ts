/**
 * Every process of a session, also those that left the process group the daemon kills: a
 * `setsid`/`setpgid` child, a double-forked daemon re-parented to init, a terminal program that
 * left the terminal's session. Each run, job and terminal is a *unit* of its session, and the
 * processes of a unit are found by one of two strategies (scope-strategy.ts), chosen once at start
 * by `ProcessScopes.detect`:
 *
 * - `cgroup` (cgroup-scope.ts): the unit is a cgroup below the daemon's own, which no `setsid`,
 *   fork or `exec` leaves;
 * - `environ` (environ-scope.ts): where no cgroup can be written, the `EXECD_SCOPE` marker in each
 *   command's environment, found by a scan of /proc.
 *
 * Beside the strategy sit the unit's resource limits (limits/), which need a cgroup too, and the
 * count of escaped process groups that `maxProcesses` checks.
 */
import { join } from 'node:path';
import type { ExecdError } from '../../protocol/errors.js';
import type { LimitReport, LimitsCapability, SessionLimits } from '../../protocol/limits.js';
import type { SessionUsage } from '../../protocol/types.js';
import { HAS_PROC } from '../../shared/proc.js';
import type { CgroupTarget } from '../executor/spawn-messages.js';
import { CgroupV1Limits, CgroupV2Limits } from '../limits/cgroup-limits.js';
import {
  NoLimits,
  type CgroupEntry,
  type CgroupLayout,
  type LimitBackend,
  type LimitCounts,
} from '../limits/limit-backend.js';
import type { EnvMap } from '../runs/env.js';
import { CgroupScope, writableCgroupHome } from './cgroup-scope.js';
import { cgroupHomes, layoutOf, removeEmpty, v1LimitHomes, type CgroupHome } from './cgroup-tree.js';
import { EnvironScope } from './environ-scope.js';
import { NoScope, type ScopeMode, type ScopeStrategy } from './scope-strategy.js';
import { listedProcesses, terminate, type Doomed } from './terminate.js';

export { parseCgroupHomes, type CgroupHome } from './cgroup-tree.js';
export type { ScopeMode } from './scope-strategy.js';

/** How a scope's escaped processes are killed. */
export interface KillOptions {
  /** Processes another part of the same kill ends (the unit's own process group, the terminal's session). */
  spare?: (member: { pgrp: number; sid: number }) => boolean;
  /** The first signals (default SIGTERM, then SIGCONT so that a stopped process acts on it). */
  signals?: readonly NodeJS.Signals[];
}

/** The first signals of an escaped process. */
const DEFAULT_SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGCONT'];

/**
 * The limits strategy beside a cgroup scope (docs/limits.md): v2 controllers delegated to the scope's
 * home, else the v1 hierarchies, else none (with every reason).
 */
function chooseLimits(home: CgroupHome | undefined, layout: CgroupLayout): LimitBackend {
  if (!home) return new NoLimits('no cgroup can be written here (the process scopes use the environment marker)');
  const reasons: string[] = [];
  if (home.kind === 'cgroup2') {
    const v2 = CgroupV2Limits.detect(home.dir, layout, process.pid);
    if (v2 instanceof CgroupV2Limits) return v2;
    reasons.push(v2.reason);
  }
  const v1 = CgroupV1Limits.detect(v1LimitHomes(), layout);
  if (v1 instanceof CgroupV1Limits) return v1;
  reasons.push(v1.reason);
  return new NoLimits(reasons.join('; '));
}

/** What `ProcessScopes.detect` is told. */
export interface ScopeOptions {
  /** The state directory: names the daemon's cgroup, the same across restarts. */
  stateDir: string;
  /** The daemon's token: keys the markers. */
  secret: string;
  /** Force a mode (`EXECD_PROCESS_SCOPE`); else `cgroup` where one can be written, then `environ`. */
  mode?: ScopeMode;
  /** False: no resource limits, whatever could be written (`EXECD_LIMITS=none`). */
  limits?: boolean;
  /** Pids never to signal: the daemon's and its spawner processes'. */
  protectedPids: () => number[];
}

/** The units of every session, and their processes. */
export class ProcessScopes {
  private lastCount: { at: number; value: Map<string, number> } | undefined;
  /** The limited units and the cgroups besides the scope's that their children are born in. */
  private readonly limitedUnits = new Map<string, { limits: SessionLimits; also: CgroupEntry[] }>();

  private constructor(
    /** How processes are found. */
    private readonly strategy: ScopeStrategy,
    /** Where resource limits are written (docs/limits.md). */
    private readonly limits: LimitBackend,
    private readonly layout: CgroupLayout | undefined,
    /** Pids never to signal: the daemon's and its spawner processes'. */
    private readonly protectedPids: () => number[] = () => [],
  ) {}

  /** Scopes that find nothing: only process groups are killed and counted. */
  static none(): ProcessScopes {
    return new ProcessScopes(new NoScope(), new NoLimits('no process scope'), undefined);
  }

  /** Picks the strategy: a cgroup where the daemon can create one and move itself in and out, else /proc. */
  static detect(options: ScopeOptions): ProcessScopes {
    const layout = layoutOf(options.stateDir);
    const scoped = HAS_PROC && options.mode !== 'none';
    const home = scoped && options.mode !== 'environ' ? writableCgroupHome(layout) : undefined;
    const limits =
      options.limits === false
        ? new NoLimits('resource limits are switched off (EXECD_LIMITS=none)')
        : chooseLimits(home, layout);
    const { secret, protectedPids } = options;
    let strategy: ScopeStrategy;
    if (!scoped) strategy = new NoScope();
    else if (!home) strategy = new EnvironScope(secret, protectedPids);
    else {
      // A v2 delegation may have moved the daemon into a leaf: a spawn returns there.
      const leave = limits.home ?? join(home.dir, 'cgroup.procs');
      strategy = new CgroupScope({ home, base: join(home.dir, layout.base), leave, secret, protectedPids });
    }
    return new ProcessScopes(strategy, limits, layout, protectedPids);
  }

  /** How processes are found. */
  get mode(): ScopeMode {
    return this.strategy.mode;
  }

  /** The hierarchy in use (`cgroup2`, `pids`, `freezer`), for the start-up log. */
  get hierarchy(): string | undefined {
    return this.strategy.hierarchy;
  }

  /** The resource limits enforced here (docs/limits.md). */
  get limitsCapability(): LimitsCapability {
    return this.limits.capability;
  }

  /** Writes a session's total memory limit (or makes its cgroup ready for one); an error when it cannot be. */
  applySessionLimits(sessionId: string, limits: SessionLimits | undefined): ExecdError | undefined {
    return this.limits.applySession(sessionId, limits);
  }

  /**
   * Makes a unit's cgroups with its limits written, before its spawn (`target` then has its child
   * born in all of them); an error when a limit cannot be written: the command must not run then.
   */
  prepareUnit(sessionId: string, unit: string, limits: SessionLimits | undefined): ExecdError | undefined {
    if (limits === undefined) return undefined;
    const also = this.limits.prepareUnit(sessionId, unit, limits);
    if (!Array.isArray(also)) {
      this.releaseLimitDirs(sessionId, unit);
      return also;
    }
    this.limitedUnits.set(unitKey(sessionId, unit), { limits, also });
    return undefined;
  }

  /** What its limits did to a unit: read at its end, before `release`. Empty for a unit without limits. */
  limitReport(sessionId: string, unit: string): LimitReport {
    const limited = this.limitedUnits.get(unitKey(sessionId, unit));
    return limited ? this.limits.report(sessionId, unit, limited.limits) : {};
  }

  /**
   * What its limits did to a unit that lives on (a terminal) since `seen`: the report of the
   * kills and refusals that are new, and the counters to pass next time.
   */
  limitNews(
    sessionId: string,
    unit: string,
    seen: LimitCounts | undefined,
  ): { report: LimitReport; counts: LimitCounts } | undefined {
    const limited = this.limitedUnits.get(unitKey(sessionId, unit));
    if (!limited) return undefined;
    const counts = this.limits.counts(sessionId, unit);
    const report: LimitReport = {};
    if (counts.oomKills > (seen?.oomKills ?? 0)) {
      const { oomKilled, oomLimitBytes } = this.limits.report(sessionId, unit, limited.limits);
      if (oomKilled) Object.assign(report, { oomKilled }, oomLimitBytes !== undefined && { oomLimitBytes });
    }
    if (counts.forkRefusals > (seen?.forkRefusals ?? 0) && limited.limits.pids !== undefined)
      report.pidsLimitReached = limited.limits.pids;
    return { report, counts };
  }

  /** A session's use of memory and CPU from its cgroup, where it has one that accounts. */
  sessionUsage(sessionId: string): SessionUsage | undefined {
    return this.limits.usage(sessionId);
  }

  /** The variables a unit's command carries: its scope's marker (none without a scope). */
  env(sessionId: string, unit: string): EnvMap {
    return this.strategy.env(sessionId, unit);
  }

  /** With a cgroup: the unit's cgroup (created now) for the spawn; undefined when it cannot be. */
  target(sessionId: string, unit: string): CgroupTarget | undefined {
    const target = this.strategy.target(sessionId, unit);
    if (!target) return undefined;
    // The v1 hierarchies of a limited unit (the scope's own, when it is one of them, is entered once).
    const also = this.limitedUnits.get(unitKey(sessionId, unit))?.also.filter((entry) => entry.enter !== target.enter);
    return { ...target, ...(also && also.length > 0 && { also }) };
  }

  /** Tells the scopes which session's group each pid leads, so a moved-in leader is never a unit's. */
  knowLeaders(leaderSession: (pid: number) => string | undefined): void {
    this.strategy.knowLeaders(leaderSession);
  }

  /**
   * The escaped processes of a scope (a session's, a unit's; every session's with no id), as one
   * part of a kill (terminate.ts): `signals` (SIGTERM and SIGCONT) to each at first, SIGKILL after
   * the grace to whatever is left. `spare` marks the processes another part of the same kill ends
   * (the unit's own process group, the terminal's session): they get no signal of this part's, and
   * a scope with nothing else in it is left to that part alone (a sandbox runner's own exit report
   * depends on which signal reaches it).
   */
  escaped(sessionId: string | undefined, unit: string | undefined, options: KillOptions = {}): Doomed {
    const spare = options.spare ?? (() => false);
    return listedProcesses(
      () => this.strategy.members(sessionId, unit).filter((member) => !spare(member)),
      options.signals ?? DEFAULT_SIGNALS,
      // Whatever the kill left, the next count looks again.
      () => (this.lastCount = undefined),
    );
  }

  /** Kills the escaped processes of a scope alone (see `escaped`); returns how many were found. */
  async kill(
    sessionId: string | undefined,
    unit: string | undefined,
    graceMs: number,
    options: KillOptions = {},
  ): Promise<number> {
    const [found] = await terminate([this.escaped(sessionId, unit, options)], graceMs);
    return found!;
  }

  /**
   * Process groups of each session that no tracked group or terminal accounts for: escaped
   * processes, counted by their group (a `setsid` child and whatever it forks are one). With a
   * cgroup only the daemon's own processes are read (not the cgroups a command may have made below
   * its unit: those are killed, not counted); with the marker all of /proc. Reused for the
   * strategy's `countTtlMs`.
   */
  escapedGroups(owned: { pgids: ReadonlySet<number>; sids: ReadonlySet<number> }): Map<string, number> {
    if (this.lastCount && Date.now() - this.lastCount.at < this.strategy.countTtlMs) return this.lastCount.value;
    const bySession = new Map<string, Set<number>>();
    const spawners = new Set([process.pid, ...this.protectedPids()]);
    for (const [session, members] of this.strategy.membersBySession()) {
      // A child of the daemon or its spawner is a unit's own leader, also while its spawn is still
      // being answered (before its group is tracked): its group and session are not escapes.
      const leaders = members.filter((member) => spawners.has(member.ppid));
      const pgids = new Set(leaders.map((member) => member.pgrp));
      const sids = new Set(leaders.map((member) => member.sid));
      for (const member of members) {
        if (owned.pgids.has(member.pgrp) || owned.sids.has(member.sid)) continue;
        if (pgids.has(member.pgrp) || sids.has(member.sid)) continue;
        let groups = bySession.get(session);
        if (!groups) bySession.set(session, (groups = new Set()));
        groups.add(member.pgrp);
      }
    }
    const counts = new Map([...bySession].map(([session, groups]) => [session, groups.size]));
    this.lastCount = { at: Date.now(), value: counts };
    return counts;
  }

  /** The key `escapedGroups` counts a session under. */
  sessionKey(sessionId: string): string {
    return this.strategy.sessionKey(sessionId);
  }

  /** Removes a unit's cgroup (or a session's, with its units) once nothing is left in it. */
  release(sessionId: string, unit?: string): void {
    this.releaseLimitDirs(sessionId, unit);
    // Still populated: something escaped (or is left over), which the next count must see.
    if (!this.strategy.release(sessionId, unit)) this.lastCount = undefined;
  }

  /** Removes a unit's (or a session's) empty cgroups in the limits' other hierarchies. */
  private releaseLimitDirs(sessionId: string, unit?: string): void {
    if (unit !== undefined) this.limitedUnits.delete(unitKey(sessionId, unit));
    else
      for (const key of this.limitedUnits.keys()) if (key.startsWith(`${sessionId}\0`)) this.limitedUnits.delete(key);
    if (!this.layout) return;
    const relative = unit === undefined ? this.layout.session(sessionId) : this.layout.unit(sessionId, unit);
    for (const home of this.limits.extraHomes) removeEmpty(join(home, relative));
  }

  /** Removes every empty cgroup of the daemon's (at shutdown). */
  releaseAll(): void {
    this.strategy.releaseAll();
    if (this.layout) for (const home of this.limits.extraHomes) removeEmpty(join(home, this.layout.base));
  }

  /** Forgets a closed session (its cgroups are removed once empty). */
  forgetSession(sessionId: string): void {
    this.strategy.forgetSession(sessionId);
    this.release(sessionId);
  }
}

/** True for a value of `EXECD_PROCESS_SCOPE`. */
export function isScopeMode(value: string | undefined): value is ScopeMode {
  return value === 'cgroup' || value === 'environ' || value === 'none';
}

/**
 * Shutdown: kills every process of every session's scope (SIGKILL after `graceMs`) and removes the
 * empty cgroups. Its own step, so that a shutdown which keeps jobs running can skip it.
 */
export async function killEscapedProcesses(scopes: ProcessScopes, graceMs: number): Promise<number> {
  const killed = await scopes.kill(undefined, undefined, graceMs);
  scopes.releaseAll();
  return killed;
}

/**
 * Removes the empty cgroups a daemon of `stateDir` left behind: one killed with -9 cannot remove
 * its own (the next daemon on that state dir does, at start). For whoever deletes a state dir.
 */
export function removeLeftCgroups(stateDir: string): void {
  if (!HAS_PROC) return;
  const base = layoutOf(stateDir).base;
  for (const home of cgroupHomes()) removeEmpty(join(home.dir, base));
  for (const home of Object.values(v1LimitHomes())) if (home !== undefined) removeEmpty(join(home, base));
}

/** A unit's key in the table of limited units. */
function unitKey(sessionId: string, unit: string): string {
  return `${sessionId}\0${unit}`;
}
