/**
 * Every process of a session, also those that left the process group the daemon kills: a
 * `setsid`/`setpgid` child, a double-forked daemon re-parented to init, a terminal program that
 * left the terminal's session. Each run, job and terminal is a *unit* of its session, and the
 * processes of a unit are found by one of two means:
 *
 * - `cgroup`: the unit is a cgroup below the daemon's own (`<home>/execd-<state>/s-<session>/u-<unit>`,
 *   each a hash; cgroup v2, else a writable v1 `pids`/`freezer` hierarchy). A process cannot leave it by any
 *   `setsid`, fork or `exec`; listing it reads one `cgroup.procs` per unit.
 * - `environ`: where no cgroup can be written (an unprivileged container), every command carries
 *   `EXECD_SCOPE=<tag>:<unit>` in its environment, the tag an HMAC of the session id under the
 *   daemon's token (so no other daemon's or session's processes match, and a command cannot name
 *   another session without reading one of that session's processes), and /proc is scanned for
 *   it. A process that clears or rewrites its environment (`exec env -i …`) is not found.
 *
 * The child enters its unit's cgroup at fork: the spawning process (the daemon or its spawner
 * process) moves itself into the cgroup, forks, and moves back, synchronously, so nothing the
 * command does can run before it is contained (moving a child after `spawn` returned would race
 * its first fork). Measured here: 0.41 ms for the move in and back of a Node process.
 */
import { createHmac, createHash } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, rmdirSync, writeFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import type { ExecdError } from '../../protocol/errors.js';
import type { LimitReport, LimitsCapability, SessionLimits } from '../../protocol/limits.js';
import type { SessionUsage } from '../../protocol/types.js';
import { HAS_PROC, readProcStat } from '../../shared/proc.js';
import type { EnvMap } from '../runs/env.js';
import type { CgroupTarget } from '../executor/spawn-messages.js';
import { CgroupV1Limits, CgroupV2Limits } from '../limits/cgroup-limits.js';
import {
  NoLimits,
  type CgroupEntry,
  type CgroupLayout,
  type LimitBackend,
  type LimitCounts,
} from '../limits/limit-backend.js';
import { bootTicksNow, ownedByUnit } from './scope-ancestry.js';

/** How `ProcessScopes.kill` treats a scope. */
export interface KillOptions {
  /** Processes another kill is ending at the same time. */
  spare?: (member: { pgrp: number; sid: number }) => boolean;
  /** The first signals (default SIGTERM, then SIGCONT so that a stopped process acts on it). */
  signals?: readonly NodeJS.Signals[];
}

/** The first signals of an escaped process. */
const DEFAULT_SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGCONT'];

/** How the processes of a unit are found. */
export type ScopeMode = 'cgroup' | 'environ' | 'none';

/** The environment variable that marks a command's processes in the `environ` mode. */
export const SCOPE_ENV = 'EXECD_SCOPE';

/** One process of a scope. */
interface Member {
  pid: number;
  ppid: number;
  startTime: number;
  pgrp: number;
  sid: number;
}

/** Interval at which a dying scope is listed again. */
const POLL_MS = 20;
/** How long SIGKILLed processes get to disappear before the kill gives up. */
const SIGKILL_SETTLE_MS = 5_000;
/**
 * How long an escaped-process count is reused: a count reads every live unit's `cgroup.procs` and
 * each member's stat (measured: 8 ms with 120 live units here), in the `environ` mode all of /proc
 * (4 ms with 106 processes), so a burst of spawns checking `maxProcesses` pays it once. A unit
 * that ends with processes left in it (an escape seen) makes the next count fresh.
 */
const COUNT_TTL_MS: Record<ScopeMode, number> = { cgroup: 250, environ: 1_000, none: 0 };

/** The cgroup a process is in, for one hierarchy: its directory, when it is mounted here. */
export interface CgroupHome {
  dir: string;
  /** `cgroup2`, or the v1 controller. */
  kind: string;
}

/**
 * The directories of this process's cgroups that are mounted, v2 first, then the v1 `pids` and
 * `freezer` hierarchies (those that neither a systemd nor a resource limit depends on).
 */
function cgroupHomes(kinds?: readonly string[]): CgroupHome[] {
  try {
    return parseCgroupHomes(
      readFileSync('/proc/self/cgroup', 'utf8'),
      readFileSync('/proc/self/mountinfo', 'utf8'),
      kinds,
    );
  } catch {
    return [];
  }
}

/**
 * The mounted cgroup directories of a process from its `/proc/<pid>/cgroup` and
 * `/proc/<pid>/mountinfo` texts (pure): v2 first, then the v1 `pids` and `freezer` hierarchies
 * (or the `kinds` asked for, in that order). A mount that shows only part of a hierarchy (a
 * container without a cgroup namespace) counts when the process's path lies below the mount's root.
 */
export function parseCgroupHomes(
  own: string,
  mountinfo: string,
  kinds: readonly string[] = ['cgroup2', 'pids', 'freezer'],
): CgroupHome[] {
  const paths = new Map<string, string>();
  for (const line of own.split('\n')) {
    const match = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (!match) continue;
    if (match[1] === '0' && match[2] === '') paths.set('cgroup2', match[3]!);
    for (const controller of match[2]!.split(',')) if (controller) paths.set(controller, match[3]!);
  }
  const homes: CgroupHome[] = [];
  for (const kind of kinds) {
    const path = paths.get(kind);
    if (path === undefined) continue;
    for (const line of mountinfo.split('\n')) {
      // id parent major:minor root mountpoint options… - fstype source superoptions
      const [left, right] = line.split(' - ');
      if (!left || !right) continue;
      const fields = left.split(' ');
      const [fstype, , superOptions = ''] = right.split(' ');
      const root = fields[3]!;
      const mountPoint = fields[4]!;
      const matches =
        kind === 'cgroup2' ? fstype === 'cgroup2' : fstype === 'cgroup' && superOptions.split(',').includes(kind);
      if (!matches) continue;
      // The mount shows the hierarchy from `root` down: the process's path must lie below it.
      if (root !== '/' && path !== root && !path.startsWith(`${root}/`)) continue;
      const relative = root === '/' ? path : path.slice(root.length);
      // `join` keeps the trailing slash of a relative path `/`.
      homes.push({ dir: relative === '/' || relative === '' ? mountPoint : join(mountPoint, relative), kind });
      break;
    }
  }
  return homes;
}

/** A file-name-safe unit or session directory name. */
function dirName(prefix: string, id: string): string {
  return `${prefix}-${createHash('sha256').update(id).digest('hex').slice(0, 16)}`;
}

/** The names of a state dir's cgroups, below any hierarchy's home. */
function layoutOf(stateDir: string): CgroupLayout {
  const base = dirName('execd', stateDir);
  return {
    base,
    session: (sessionId) => join(base, dirName('s', sessionId)),
    unit: (sessionId, unit) => join(base, dirName('s', sessionId), dirName('u', unit)),
  };
}

/** The v1 hierarchies resource limits use, by controller: the daemon's cgroup in each that is mounted. */
function v1LimitHomes(): Partial<Record<string, string>> {
  const homes: Partial<Record<string, string>> = {};
  for (const home of cgroupHomes(['memory', 'cpu', 'pids', 'cpuacct'])) homes[home.kind] = home.dir;
  return homes;
}

/**
 * The limits strategy beside a cgroup scope (docs/limits.md): v2 controllers delegated to the scope's
 * home, else the v1 hierarchies, else none (with every reason).
 */
function chooseLimits(scope: { home: string; kind: string } | undefined, layout: CgroupLayout): LimitBackend {
  if (!scope) return new NoLimits('no cgroup can be written here (the process scopes use the environment marker)');
  const reasons: string[] = [];
  if (scope.kind === 'cgroup2') {
    const v2 = CgroupV2Limits.detect(scope.home, layout, process.pid);
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
  /** The daemon's token: keys the `environ` tags. */
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
    readonly mode: ScopeMode,
    private readonly secret: string,
    private readonly protectedPids: () => number[],
    /** Where resource limits are written (docs/limits.md). */
    private readonly limits: LimitBackend,
    /** With `cgroup`: the daemon's own cgroup directory and the one below it that holds the sessions. */
    private readonly cgroup?: { home: string; base: string; kind: string; leave: string },
    private readonly layout?: CgroupLayout,
  ) {}

  /** Scopes that find nothing: only process groups are killed and counted. */
  static none(): ProcessScopes {
    return new ProcessScopes('none', '', () => [], new NoLimits('no process scope'));
  }

  /** Picks the mode: a cgroup where the daemon can create one and move itself in and out, else /proc. */
  static detect(options: ScopeOptions): ProcessScopes {
    const layout = layoutOf(options.stateDir);
    const make = (mode: ScopeMode, cgroup?: { home: string; base: string; kind: string }) => {
      const limits =
        options.limits === false
          ? new NoLimits('resource limits are switched off (EXECD_LIMITS=none)')
          : chooseLimits(cgroup, layout);
      // A v2 delegation may have moved the daemon into a leaf: a spawn returns there.
      const leave = limits.home ?? (cgroup && join(cgroup.home, 'cgroup.procs'));
      return new ProcessScopes(
        mode,
        options.secret,
        options.protectedPids,
        limits,
        cgroup && { ...cgroup, leave: leave! },
        layout,
      );
    };
    if (!HAS_PROC || options.mode === 'none') return make('none');
    if (options.mode !== 'environ') {
      for (const home of cgroupHomes()) {
        const base = join(home.dir, layout.base);
        try {
          // The move is tried in a leaf below the base: under cgroup v2 a base that an earlier
          // daemon delegated controllers to (see limits/) may hold no process itself.
          const probe = join(base, 'probe');
          mkdirSync(probe, { recursive: true });
          writeFileSync(join(probe, 'cgroup.procs'), String(process.pid));
          writeFileSync(join(home.dir, 'cgroup.procs'), String(process.pid));
          // Empty cgroups a daemon killed with -9 left behind go; populated ones (processes that
          // outlived it) stay, to be killed with their session or at shutdown.
          removeEmpty(base);
          for (const other of Object.values(v1LimitHomes()))
            if (other !== undefined) removeEmpty(join(other, layout.base));
          return make('cgroup', { home: home.dir, base, kind: home.kind });
        } catch {
          // Not writable here (unprivileged, a container): the next hierarchy, or /proc.
        }
      }
    }
    return make('environ');
  }

  /** The hierarchy in use (`cgroup2`, `pids`, `freezer`), for the start-up log. */
  get hierarchy(): string | undefined {
    return this.cgroup?.kind;
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

  private sessionDir(sessionId: string): string {
    return join(this.cgroup!.base, dirName('s', sessionId));
  }

  private unitDir(sessionId: string, unit: string): string {
    return join(this.sessionDir(sessionId), dirName('u', unit));
  }

  private tag(sessionId: string): string {
    return createHmac('sha256', this.secret).update(`execd-scope:${sessionId}`).digest('hex').slice(0, 32);
  }

  /** The variables a unit's command carries: the marker in the `environ` mode, nothing else. */
  env(sessionId: string, unit: string): EnvMap {
    if (this.mode !== 'environ') return {};
    const tag = this.tag(sessionId);
    this.knownTags.add(tag);
    return { [SCOPE_ENV]: `${tag}:${unit}` };
  }

  /** With `cgroup`: the unit's cgroup (created now) for the spawn; undefined when it cannot be. */
  target(sessionId: string, unit: string): CgroupTarget | undefined {
    if (this.mode !== 'cgroup') return undefined;
    const dir = this.unitDir(sessionId, unit);
    try {
      mkdirSync(dir, { recursive: true });
    } catch {
      return undefined;
    }
    // When it was made: a process that started earlier was moved in, and is never killed with it.
    const now = readBootTicks();
    if (now !== undefined) {
      this.createdAt.set(dir, now);
      if (!this.createdAt.has(this.sessionDir(sessionId))) this.createdAt.set(this.sessionDir(sessionId), now);
    }
    const enter = join(dir, 'cgroup.procs');
    // The v1 hierarchies of a limited unit (the scope's own, when it is one of them, is entered once).
    const also = this.limitedUnits.get(unitKey(sessionId, unit))?.also.filter((entry) => entry.enter !== enter);
    return { enter, leave: this.cgroup!.leave, ...(also && also.length > 0 && { also }) };
  }

  /** Live members of a session's scope, or of one unit of it; every session's with no id. */
  private members(sessionId: string | undefined, unit?: string): Member[] {
    if (this.mode === 'none') return [];
    if (this.mode === 'cgroup') return this.ownCgroupMembers(sessionId, unit);
    return this.membersOf(this.environPids(sessionId, unit));
  }

  /** Boot ticks at which each unit's (and session's) cgroup was made by this daemon. */
  private readonly createdAt = new Map<string, number>();

  /** The session whose tracked group a pid leads, if any (set by the process registry). */
  private leaderSession: (pid: number) => string | undefined = () => undefined;

  /** Tells the scopes which session's group each pid leads, so a moved-in leader is never a unit's. */
  knowLeaders(leaderSession: (pid: number) => string | undefined): void {
    this.leaderSession = leaderSession;
  }

  /**
   * The members of the units in question that descend from what the daemon started in them
   * (scope-ancestry.ts): a process moved into a unit from outside is left alone. Each unit is judged
   * on its own, and the processes directly in a session's cgroup (where no spawn puts any) as one more.
   */
  private ownCgroupMembers(sessionId: string | undefined, unit?: string): Member[] {
    const sessions = sessionId === undefined ? subdirs(this.cgroup!.base) : [dirName('s', sessionId)];
    // A unit with the cgroups its command made below it; a session directory's own processes alone.
    const groups: Array<{ dir: string; pids: (dir: string) => number[] }> = [];
    for (const session of sessions) {
      const sessionDir = join(this.cgroup!.base, session);
      if (unit !== undefined) groups.push({ dir: join(sessionDir, dirName('u', unit)), pids: procsBelow });
      else {
        groups.push({ dir: sessionDir, pids: procsIn });
        for (const name of subdirs(sessionDir)) groups.push({ dir: join(sessionDir, name), pids: procsBelow });
      }
    }
    const spawners = new Set([process.pid, ...this.protectedPids()]);
    const startOf = (pid: number) => readProcStat(pid)?.startTime;
    // Another session's leader moved in is never this unit's (all sessions at once: no such other).
    const mayLead = (pid: number) => {
      const owner = sessionId === undefined ? undefined : this.leaderSession(pid);
      return owner === undefined || owner === sessionId;
    };
    return groups.flatMap(({ dir, pids }) =>
      ownedByUnit(this.membersOf(pids(dir)), spawners, this.createdAt.get(dir), startOf, mayLead),
    );
  }

  private environPids(sessionId: string | undefined, unit?: string): number[] {
    const wanted = sessionId === undefined ? undefined : `${this.tag(sessionId)}:`;
    const pids: number[] = [];
    let names: string[];
    try {
      names = readdirSync('/proc');
    } catch {
      return [];
    }
    const spawners = new Set([process.pid, ...this.protectedPids()]);
    const seen = new Set<number>();
    for (const name of names) {
      const pid = Number(name);
      if (!Number.isInteger(pid)) continue;
      seen.add(pid);
      const value = this.scopeVariableOf(pid, spawners);
      if (value === undefined) continue;
      if (
        wanted === undefined
          ? this.ownsTag(value)
          : unit === undefined
            ? value.startsWith(wanted)
            : value === `${wanted}${unit}`
      )
        pids.push(pid);
    }
    for (const pid of this.environCache.keys()) if (!seen.has(pid)) this.environCache.delete(pid);
    return pids;
  }

  /**
   * The marker each process was found with, by pid, valid for that start time and environment
   * size: the environment a process was started with never changes (an exec that replaces it
   * changes its size, almost always), so each process is read once, not at every scan.
   */
  private readonly environCache = new Map<
    number,
    { startTime: number; environBytes: number; value: string | undefined }
  >();

  /** The marker of process `pid` (cached, see `environCache`); undefined when it has none. */
  private scopeVariableOf(pid: number, spawners: ReadonlySet<number>): string | undefined {
    const stat = readProcStat(pid);
    if (!stat) return undefined;
    const environBytes = stat.environBytes ?? 0;
    const cached = this.environCache.get(pid);
    if (cached && cached.startTime === stat.startTime && cached.environBytes === environBytes) return cached.value;
    const value = readScopeVariable(pid, environBytes);
    // Between its fork and its exec a command still shows its spawner's environment, without the
    // marker: that absence is not remembered.
    if (value !== undefined || !spawners.has(stat.ppid))
      this.environCache.set(pid, { startTime: stat.startTime, environBytes, value });
    return value;
  }

  /**
   * The tags of the sessions whose commands carry a marker: a daemon-wide kill or count matches
   * these only (a tag cannot be traced back to its session id, and another daemon's are not ours).
   */
  private readonly knownTags = new Set<string>();

  private ownsTag(value: string): boolean {
    return this.knownTags.has(value.slice(0, value.indexOf(':')));
  }

  /**
   * Kills the escaped processes of a scope (a session's, a unit's; every session's with no id):
   * `signals` (SIGTERM and SIGCONT) to each, SIGKILL after `graceMs` to whatever is left in the
   * scope, and resolves once none is left (or after 5 s more). `spare` marks the processes another
   * kill is ending with the same grace (the unit's own process group, the terminal's session): they
   * get no signal of ours before the SIGKILL, and a scope with nothing else in it is left to that
   * kill alone (a sandbox runner's own exit report depends on which signal reaches it). Returns how
   * many escaped processes were found.
   */
  async kill(
    sessionId: string | undefined,
    unit: string | undefined,
    graceMs: number,
    options: KillOptions = {},
  ): Promise<number> {
    const spare = options.spare ?? (() => false);
    const escaped = this.members(sessionId, unit).filter((member) => !spare(member));
    if (escaped.length === 0) return 0;
    for (const name of options.signals ?? DEFAULT_SIGNALS) for (const member of escaped) signal(member, name);
    // Until the scope is empty (the spared too: their kill has the same grace) or the grace is over.
    const until = Date.now() + graceMs;
    while (Date.now() < until && this.members(sessionId, unit).length > 0) await delay(POLL_MS);
    const settle = Date.now() + SIGKILL_SETTLE_MS;
    for (;;) {
      const left = this.members(sessionId, unit);
      if (left.length === 0 || Date.now() >= settle) break;
      for (const member of left) signal(member, 'SIGKILL');
      await delay(POLL_MS);
    }
    this.lastCount = undefined;
    return escaped.length;
  }

  /**
   * Process groups of each session that no tracked group or terminal accounts for: escaped
   * processes, counted by their group (a `setsid` child and whatever it forks are one). With a
   * cgroup only the daemon's own processes are read (not the cgroups a command may have made below
   * its unit: those are killed, not counted); in the `environ` mode all of /proc. Reused for
   * COUNT_TTL_MS.
   */
  escapedGroups(owned: { pgids: ReadonlySet<number>; sids: ReadonlySet<number> }): Map<string, number> {
    if (this.mode === 'none') return new Map();
    if (this.lastCount && Date.now() - this.lastCount.at < COUNT_TTL_MS[this.mode]) return this.lastCount.value;
    const bySession = new Map<string, Set<number>>();
    const spawners = new Set([process.pid, ...this.protectedPids()]);
    for (const [session, members] of this.membersBySession()) {
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

  /** The live members of every session, keyed by a session key (its directory or tag). */
  private membersBySession(): Map<string, Member[]> {
    const out = new Map<string, Member[]>();
    if (this.mode === 'cgroup') {
      for (const session of subdirs(this.cgroup!.base)) {
        const dir = join(this.cgroup!.base, session);
        const pids = [dir, ...subdirs(dir).map((unit) => join(dir, unit))].flatMap(procsIn);
        out.set(session, this.membersOf(pids));
      }
      return out;
    }
    const spawners = new Set([process.pid, ...this.protectedPids()]);
    for (const pid of this.environPids(undefined)) {
      const value = this.scopeVariableOf(pid, spawners);
      if (value === undefined) continue;
      const key = value.slice(0, value.indexOf(':'));
      out.set(key, [...(out.get(key) ?? []), ...this.membersOf([pid])]);
    }
    return out;
  }

  private membersOf(pids: number[]): Member[] {
    const spared = new Set([process.pid, ...this.protectedPids()]);
    const members: Member[] = [];
    for (const pid of new Set(pids)) {
      if (spared.has(pid)) continue;
      const stat = readProcStat(pid);
      if (!stat || stat.state === 'Z' || stat.state === 'X') continue;
      members.push({ pid, ppid: stat.ppid, startTime: stat.startTime, pgrp: stat.pgrp, sid: stat.session });
    }
    return members;
  }

  /** The key `escapedGroups` counts a session under. */
  sessionKey(sessionId: string): string {
    return this.mode === 'cgroup' ? dirName('s', sessionId) : this.tag(sessionId);
  }

  /** Removes a unit's cgroup (or a session's, with its units) once nothing is left in it. */
  release(sessionId: string, unit?: string): void {
    if (this.mode !== 'cgroup') return;
    this.releaseLimitDirs(sessionId, unit);
    const dir = unit === undefined ? this.sessionDir(sessionId) : this.unitDir(sessionId, unit);
    // Still populated: something escaped (or is left over), which the next count must see.
    if (!removeEmpty(dir)) this.lastCount = undefined;
    else
      for (const known of this.createdAt.keys())
        if (known === dir || known.startsWith(dir + sep)) this.createdAt.delete(known);
  }

  /** Removes a unit's (or a session's) empty cgroups in the limits' other hierarchies. */
  private releaseLimitDirs(sessionId: string, unit?: string): void {
    if (unit !== undefined) this.limitedUnits.delete(unitKey(sessionId, unit));
    else
      for (const key of this.limitedUnits.keys()) if (key.startsWith(`${sessionId}\0`)) this.limitedUnits.delete(key);
    const layout = this.layout!;
    const relative = unit === undefined ? layout.session(sessionId) : layout.unit(sessionId, unit);
    for (const home of this.limits.extraHomes) removeEmpty(join(home, relative));
  }

  /** Removes every empty cgroup of the daemon's (at shutdown). */
  releaseAll(): void {
    if (this.mode !== 'cgroup') return;
    removeEmpty(this.cgroup!.base);
    for (const home of this.limits.extraHomes) removeEmpty(join(home, this.layout!.base));
  }

  /** Forgets a closed session (its cgroups are removed once empty). */
  forgetSession(sessionId: string): void {
    if (this.mode === 'environ') this.knownTags.delete(this.tag(sessionId));
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

/** The boot clock now in `/proc` ticks; undefined when it cannot be read. */
function readBootTicks(): number | undefined {
  try {
    return bootTicksNow(readFileSync('/proc/uptime', 'utf8'));
  } catch {
    return undefined;
  }
}

/** Pids in one cgroup (none when it is gone). */
function procsIn(dir: string): number[] {
  try {
    return readFileSync(join(dir, 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map(Number);
  } catch {
    return [];
  }
}

/** Pids in a cgroup and every cgroup below it. */
function procsBelow(dir: string): number[] {
  const pids = procsIn(dir);
  for (const sub of subdirs(dir)) pids.push(...procsBelow(join(dir, sub)));
  return pids;
}

/** The child cgroups of a cgroup directory. */
function subdirs(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
  } catch {
    return [];
  }
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

/**
 * Removes a cgroup directory and those below it, deepest first; a populated one stays. False when
 * one stayed (EBUSY: a process is still in it).
 */
function removeEmpty(dir: string): boolean {
  // A unit has no cgroup below it unless its command made one: one rmdir, no listing (a listing of
  // a cgroup directory costs ~0.1 ms, at the end of every run).
  if (tryRmdir(dir) !== 'EBUSY') return true;
  let removed = true;
  for (const sub of subdirs(dir)) removed = removeEmpty(join(dir, sub)) && removed;
  return removed && tryRmdir(dir) !== 'EBUSY';
}

/** rmdir; the error code when it failed (ENOENT: it was gone already). */
function tryRmdir(dir: string): string | undefined {
  try {
    rmdirSync(dir);
    return undefined;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'EIO';
    return code === 'ENOENT' ? undefined : code === 'ENOTEMPTY' ? 'EBUSY' : code;
  }
}

/**
 * How much of a process's environment the marker scan reads: this many bytes from its start and as
 * many from its end. The marker is a variable the daemon adds; a shell may move it (bash puts it
 * last), so both ends are read. A process whose environment is larger than twice this and whose
 * marker lies in neither end is not found, like one that cleared its environment (docs/reliability.md).
 */
export const ENVIRON_READ_CAP = 64 * 1024;

const SCOPE_KEY = Buffer.from(`${SCOPE_ENV}=`);

/**
 * The value of `EXECD_SCOPE` in a process's environment; undefined when unset or unreadable. At
 * most `2 * ENVIRON_READ_CAP` bytes are read, whatever the environment's size.
 */
function readScopeVariable(pid: number, environBytes: number): string | undefined {
  let fd: number;
  try {
    fd = openSync(`/proc/${pid}/environ`, 'r');
  } catch {
    return undefined;
  }
  try {
    // Where the size is hidden, the environment is read up to the cap from its start only.
    const whole = environBytes > 0 && environBytes <= 2 * ENVIRON_READ_CAP;
    const head = readAt(fd, 0, whole ? environBytes : ENVIRON_READ_CAP);
    const found = scopeValueIn(head, true, !whole && head.length === ENVIRON_READ_CAP);
    if (found !== undefined || whole || environBytes <= ENVIRON_READ_CAP) return found;
    const tail = readAt(fd, environBytes - ENVIRON_READ_CAP, ENVIRON_READ_CAP);
    return scopeValueIn(tail, false, false);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

function readAt(fd: number, position: number, length: number): Buffer {
  const buffer = Buffer.allocUnsafe(length);
  let filled = 0;
  while (filled < length) {
    const read = readSync(fd, buffer, filled, length - filled, position + filled);
    if (read === 0) break;
    filled += read;
  }
  return buffer.subarray(0, filled);
}

/**
 * The marker's value in a slice of an environment. `atStart`: the slice begins a variable (else
 * its first, partial one is skipped); `cut`: the slice ends mid-variable (a match running into its
 * end is incomplete, so not trusted).
 */
function scopeValueIn(slice: Buffer, atStart: boolean, cut: boolean): string | undefined {
  let start = slice.indexOf(SCOPE_KEY);
  // A match must start a variable: at 0 (when the slice begins one) or right after a NUL.
  while (start >= 0 && !(start === 0 ? atStart : slice[start - 1] === 0)) start = slice.indexOf(SCOPE_KEY, start + 1);
  if (start < 0) return undefined;
  const end = slice.indexOf(0, start);
  if (end < 0 && cut) return undefined;
  return slice.subarray(start + SCOPE_KEY.length, end < 0 ? slice.length : end).toString();
}

/** Signals a process if it is still the one seen (same start time). */
function signal(member: Member, name: NodeJS.Signals): void {
  const now = readProcStat(member.pid);
  if (!now || now.startTime !== member.startTime) return;
  try {
    process.kill(member.pid, name);
  } catch {
    // Gone meanwhile.
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
