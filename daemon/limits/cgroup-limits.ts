/**
 * The two cgroup strategies of resource limits (see limit-backend.ts).
 *
 * - v2: the `memory`, `cpu` and `pids` controllers the daemon's cgroup was delegated are enabled in
 *   `cgroup.subtree_control` of its home and of every cgroup down to the units. A cgroup with
 *   controllers enabled for its children may hold no process itself, so where the daemon's home
 *   does, the daemon moves into a leaf of its own beside its sessions (`execd-<state>.daemon`); a
 *   home shared with other processes (a login shell's) cannot delegate, and nothing is enforced.
 * - v1: the `memory`, `cpu` and `pids` hierarchies (and `cpuacct`, for CPU time) where the daemon
 *   can make a cgroup below its own. A limited unit's child is born in its cgroup of each, as in
 *   the scope's; a unit without limits enters none of them (its spawn costs nothing more).
 */
import { rmdirSync } from 'node:fs';
import { join } from 'node:path';
import type { LimitName, LimitReport, LimitsCapability, SessionLimits } from '../../protocol/limits.js';
import type { SessionUsage } from '../../protocol/types.js';
import type { ExecdError } from '../../protocol/errors.js';
import {
  CPU_PERIOD_MICROS,
  cpuQuotaMicros,
  keyedCounter,
  makeCgroup,
  numberIn,
  oomLimit,
  readCgroupFile,
  unavailable,
  writeCgroupFile,
  type CgroupEntry,
  type CgroupLayout,
  type LimitBackend,
  type LimitCounts,
} from './limit-backend.js';

/** The v2 controllers limits use. */
const V2_CONTROLLERS = ['memory', 'cpu', 'pids'] as const;

/** The limits each controller enforces. */
const ENFORCED_BY: Record<string, LimitName[]> = {
  memory: ['memoryBytes', 'sessionMemoryBytes'],
  cpu: ['cpus'],
  pids: ['pids'],
};

/** The limits a set of controllers enforces, in `LIMIT_NAMES` order. */
function enforcedBy(controllers: readonly string[]): LimitName[] {
  const names = new Set(controllers.flatMap((controller) => ENFORCED_BY[controller] ?? []));
  return (['memoryBytes', 'cpus', 'pids', 'sessionMemoryBytes'] as const).filter((name) => names.has(name));
}

/** The failure of a limit write, as LIMIT_UNAVAILABLE naming the limit and the file. */
function writeFailed(name: LimitName, capability: LimitsCapability, error: string): ExecdError {
  return unavailable(name, capability, `writing ${error}`);
}

/** cgroup v2: controllers delegated to the daemon's subtree. */
export class CgroupV2Limits implements LimitBackend {
  readonly capability: LimitsCapability;
  readonly extraHomes: readonly string[] = [];

  private constructor(
    private readonly root: string,
    private readonly layout: CgroupLayout,
    private readonly controllers: readonly string[],
    readonly home: string | undefined,
  ) {
    this.capability = { backend: 'cgroup2', enforces: enforcedBy(controllers) };
    const missing = V2_CONTROLLERS.filter((controller) => !controllers.includes(controller));
    if (missing.length > 0) this.capability.unavailable = `cgroup v2 without the ${missing.join(', ')} controller`;
  }

  /**
   * Enables the controllers `root` (the daemon's cgroup v2 home) was delegated in its subtree,
   * moving the daemon into a leaf when its home must hold no process. Undefined, with the reason,
   * when none can be: the caller tries the v1 hierarchies.
   */
  static detect(root: string, layout: CgroupLayout, pid: number): CgroupV2Limits | { reason: string } {
    const available = (readCgroupFile(root, 'cgroup.controllers') ?? '').trim().split(/\s+/);
    const controllers = V2_CONTROLLERS.filter((controller) => available.includes(controller));
    if (controllers.length === 0) return { reason: `cgroup v2 at ${root} has no memory, cpu or pids controller` };
    const enable = (dir: string) =>
      writeCgroupFile(dir, 'cgroup.subtree_control', controllers.map((name) => `+${name}`).join(' '));
    let home: string | undefined;
    let failed = enable(root);
    if (failed !== undefined) {
      // Its home holds processes (the daemon's own at least): the daemon moves into a leaf.
      const leaf = join(root, `${layout.base}.daemon`);
      const made = makeCgroup(leaf) ?? writeCgroupFile(leaf, 'cgroup.procs', String(pid));
      if (made === undefined) {
        failed = enable(root);
        if (failed === undefined) home = join(leaf, 'cgroup.procs');
        else {
          writeCgroupFile(root, 'cgroup.procs', String(pid));
          removeCgroup(leaf);
        }
      } else failed = made;
    }
    if (failed !== undefined) {
      return {
        reason: `cgroup v2: cannot enable ${controllers.join(', ')} below ${root} (${failed}; other processes share its cgroup)`,
      };
    }
    const base = join(root, layout.base);
    const baseFailed = makeCgroup(base) ?? enable(base);
    if (baseFailed !== undefined) return { reason: `cgroup v2: cannot enable controllers in ${base} (${baseFailed})` };
    return new CgroupV2Limits(root, layout, controllers, home);
  }

  private enable(dir: string): string | undefined {
    return writeCgroupFile(dir, 'cgroup.subtree_control', this.controllers.map((name) => `+${name}`).join(' '));
  }

  applySession(sessionId: string, limits: SessionLimits | undefined): ExecdError | undefined {
    const dir = join(this.root, this.layout.session(sessionId));
    const failed = makeCgroup(dir) ?? this.enable(dir);
    if (failed !== undefined)
      return limits?.sessionMemoryBytes === undefined
        ? undefined
        : writeFailed('sessionMemoryBytes', this.capability, failed);
    if (limits?.sessionMemoryBytes === undefined) return undefined;
    const written = writeCgroupFile(dir, 'memory.max', String(limits.sessionMemoryBytes));
    if (written !== undefined) return writeFailed('sessionMemoryBytes', this.capability, written);
    // Without swap the limit is reached, not passed by swapping (absent without swap accounting).
    writeCgroupFile(dir, 'memory.swap.max', '0');
    return undefined;
  }

  prepareUnit(sessionId: string, unit: string, limits: SessionLimits): CgroupEntry[] | ExecdError {
    const refused = this.applySession(sessionId, limits);
    if (refused) return refused;
    const dir = join(this.root, this.layout.unit(sessionId, unit));
    const made = makeCgroup(dir);
    if (made !== undefined) return writeFailed(firstSet(limits), this.capability, made);
    const writes: Array<[LimitName, string, string | undefined]> = [
      ['memoryBytes', 'memory.max', limits.memoryBytes === undefined ? undefined : String(limits.memoryBytes)],
      [
        'cpus',
        'cpu.max',
        limits.cpus === undefined
          ? undefined
          : `${cpuQuotaMicros(limits.cpus, CPU_PERIOD_MICROS)} ${CPU_PERIOD_MICROS}`,
      ],
      ['pids', 'pids.max', limits.pids === undefined ? undefined : String(limits.pids)],
    ];
    for (const [name, file, value] of writes) {
      if (value === undefined) continue;
      const failed = writeCgroupFile(dir, file, value);
      if (failed !== undefined) return writeFailed(name, this.capability, failed);
    }
    if (limits.memoryBytes !== undefined) writeCgroupFile(dir, 'memory.swap.max', '0');
    return [];
  }

  report(sessionId: string, unit: string, limits: SessionLimits): LimitReport {
    const dir = join(this.root, this.layout.unit(sessionId, unit));
    const report: LimitReport = {};
    const memory = readCgroupFile(dir, 'memory.events');
    if (keyedCounter(memory, 'oom_kill') > 0) {
      report.oomKilled = true;
      const limit = oomLimit(limits, keyedCounter(memory, 'max') > 0);
      if (limit !== undefined) report.oomLimitBytes = limit;
    }
    if (limits.pids !== undefined && keyedCounter(readCgroupFile(dir, 'pids.events'), 'max') > 0) {
      report.pidsLimitReached = limits.pids;
    }
    return report;
  }

  counts(sessionId: string, unit: string): LimitCounts {
    const dir = join(this.root, this.layout.unit(sessionId, unit));
    return {
      oomKills: keyedCounter(readCgroupFile(dir, 'memory.events'), 'oom_kill'),
      forkRefusals: keyedCounter(readCgroupFile(dir, 'pids.events'), 'max'),
    };
  }

  usage(sessionId: string): SessionUsage | undefined {
    const dir = join(this.root, this.layout.session(sessionId));
    const memoryBytes = numberIn(dir, 'memory.current');
    if (memoryBytes === undefined) return undefined;
    const usage: SessionUsage = { memoryBytes };
    const peak = numberIn(dir, 'memory.peak');
    if (peak !== undefined) usage.memoryPeakBytes = peak;
    const cpu = readCgroupFile(dir, 'cpu.stat');
    if (cpu !== undefined) usage.cpuMicros = keyedCounter(cpu, 'usage_usec');
    return usage;
  }
}

/** Removes an empty cgroup; one that cannot go stays (it is empty, and harmless). */
function removeCgroup(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // Not empty, or gone.
  }
}

/** The first limit set, for naming a failure that concerns them all. */
function firstSet(limits: SessionLimits): LimitName {
  return (
    (['memoryBytes', 'cpus', 'pids', 'sessionMemoryBytes'] as const).find((name) => limits[name] !== undefined) ??
    'memoryBytes'
  );
}

const MiB = 1024 * 1024;

/** The v1 hierarchies limits use, and the one that only accounts (CPU time). */
const V1_CONTROLLERS = ['memory', 'cpu', 'pids', 'cpuacct'] as const;
type V1Controller = (typeof V1_CONTROLLERS)[number];

/** cgroup v1: the `memory`, `cpu`, `pids` (and `cpuacct`) hierarchies where the daemon can write. */
export class CgroupV1Limits implements LimitBackend {
  readonly capability: LimitsCapability;
  readonly extraHomes: readonly string[];

  private constructor(
    /** Each writable hierarchy's home (the daemon's cgroup in it); one directory may serve two (`cpu,cpuacct`). */
    private readonly homes: Partial<Record<V1Controller, string>>,
    private readonly layout: CgroupLayout,
    reasons: string[],
  ) {
    const limiting = (['memory', 'cpu', 'pids'] as const).filter((controller) => homes[controller] !== undefined);
    this.capability = { backend: 'cgroup1', enforces: enforcedBy(limiting) };
    if (reasons.length > 0) this.capability.unavailable = reasons.join('; ');
    this.extraHomes = [...new Set(Object.values(homes))];
  }

  /**
   * The hierarchies whose home (`homes`, by controller) lets the daemon make a cgroup and write its
   * limit file; the reason when none does.
   */
  static detect(homes: Partial<Record<string, string>>, layout: CgroupLayout): CgroupV1Limits | { reason: string } {
    const usable: Partial<Record<V1Controller, string>> = {};
    const reasons: string[] = [];
    const probe: Record<V1Controller, [string, string]> = {
      memory: ['memory.limit_in_bytes', '-1'],
      cpu: ['cpu.cfs_quota_us', '-1'],
      pids: ['pids.max', 'max'],
      cpuacct: ['cpuacct.usage', '0'],
    };
    for (const controller of V1_CONTROLLERS) {
      const home = homes[controller];
      if (home === undefined) {
        if (controller !== 'cpuacct') reasons.push(`no ${controller} hierarchy is mounted`);
        continue;
      }
      const base = join(home, layout.base);
      const [file, value] = probe[controller];
      const failed = makeCgroup(base) ?? writeCgroupFile(base, file, value);
      if (failed === undefined) usable[controller] = home;
      else if (controller !== 'cpuacct') reasons.push(`the ${controller} hierarchy is not writable (${failed})`);
    }
    if (usable.memory === undefined && usable.cpu === undefined && usable.pids === undefined) {
      return { reason: `cgroup v1: ${reasons.join('; ')}` };
    }
    return new CgroupV1Limits(usable, layout, reasons);
  }

  applySession(sessionId: string, limits: SessionLimits | undefined): ExecdError | undefined {
    if (limits?.sessionMemoryBytes === undefined) return undefined;
    const home = this.homes.memory;
    if (home === undefined) return unavailable('sessionMemoryBytes', this.capability);
    const dir = join(home, this.layout.session(sessionId));
    const failed = makeCgroup(dir) ?? writeCgroupFile(dir, 'memory.limit_in_bytes', String(limits.sessionMemoryBytes));
    if (failed !== undefined) return writeFailed('sessionMemoryBytes', this.capability, failed);
    // Memory and swap together (where swap is accounted): the limit is reached, not passed by swapping.
    writeCgroupFile(dir, 'memory.memsw.limit_in_bytes', String(limits.sessionMemoryBytes));
    return undefined;
  }

  prepareUnit(sessionId: string, unit: string, limits: SessionLimits): CgroupEntry[] | ExecdError {
    const refused = this.applySession(sessionId, limits);
    if (refused) return refused;
    const entries: CgroupEntry[] = [];
    const dirs = new Map<string, string>();
    // Memory and CPU time are accounted for every limited unit (a session's use in daemon/status);
    // the cpu and pids hierarchies are entered only for their own limit: each costs a cgroup made,
    // two moves of the spawning process and a removal per command.
    const needed: V1Controller[] = ['memory', 'cpuacct'];
    if (limits.cpus !== undefined) needed.push('cpu');
    if (limits.pids !== undefined) needed.push('pids');
    const homes = new Set(needed.map((controller) => this.homes[controller]).filter((home) => home !== undefined));
    for (const home of homes) {
      const dir = join(home, this.layout.unit(sessionId, unit));
      const made = makeCgroup(dir);
      if (made !== undefined) return writeFailed(firstSet(limits), this.capability, made);
      dirs.set(home, dir);
      entries.push({ enter: join(dir, 'cgroup.procs'), leave: join(home, 'cgroup.procs') });
    }
    const at = (controller: V1Controller) => dirs.get(this.homes[controller]!)!;
    if (limits.memoryBytes !== undefined) {
      const failed = writeCgroupFile(at('memory'), 'memory.limit_in_bytes', String(limits.memoryBytes));
      if (failed !== undefined) return writeFailed('memoryBytes', this.capability, failed);
      writeCgroupFile(at('memory'), 'memory.memsw.limit_in_bytes', String(limits.memoryBytes));
    }
    if (limits.cpus !== undefined) {
      const failed =
        writeCgroupFile(at('cpu'), 'cpu.cfs_period_us', String(CPU_PERIOD_MICROS)) ??
        writeCgroupFile(at('cpu'), 'cpu.cfs_quota_us', String(cpuQuotaMicros(limits.cpus, CPU_PERIOD_MICROS)));
      if (failed !== undefined) return writeFailed('cpus', this.capability, failed);
    }
    if (limits.pids !== undefined) {
      const failed = writeCgroupFile(at('pids'), 'pids.max', String(limits.pids));
      if (failed !== undefined) return writeFailed('pids', this.capability, failed);
    }
    return entries;
  }

  report(sessionId: string, unit: string, limits: SessionLimits): LimitReport {
    const report: LimitReport = {};
    const memoryHome = this.homes.memory;
    if (memoryHome !== undefined) {
      const dir = join(memoryHome, this.layout.unit(sessionId, unit));
      if (keyedCounter(readCgroupFile(dir, 'memory.oom_control'), 'oom_kill') > 0) {
        report.oomKilled = true;
        // The unit reached its own limit when its charge failed there (memory.failcnt; not counted
        // where memory and swap are limited together, measured on 6.18) or its peak came within a
        // megabyte of it.
        const failures = numberIn(dir, 'memory.failcnt') ?? 0;
        const peak = numberIn(dir, 'memory.max_usage_in_bytes') ?? 0;
        const reached = limits.memoryBytes !== undefined && peak + MiB >= limits.memoryBytes;
        const limit = oomLimit(limits, failures > 0 || reached);
        if (limit !== undefined) report.oomLimitBytes = limit;
      }
    }
    const pidsHome = this.homes.pids;
    if (pidsHome !== undefined && limits.pids !== undefined) {
      const dir = join(pidsHome, this.layout.unit(sessionId, unit));
      if (keyedCounter(readCgroupFile(dir, 'pids.events'), 'max') > 0) report.pidsLimitReached = limits.pids;
    }
    return report;
  }

  counts(sessionId: string, unit: string): LimitCounts {
    const at = (home: string | undefined, file: string, key: string) =>
      home === undefined ? 0 : keyedCounter(readCgroupFile(join(home, this.layout.unit(sessionId, unit)), file), key);
    return {
      oomKills: at(this.homes.memory, 'memory.oom_control', 'oom_kill'),
      forkRefusals: at(this.homes.pids, 'pids.events', 'max'),
    };
  }

  usage(sessionId: string): SessionUsage | undefined {
    const home = this.homes.memory;
    if (home === undefined) return undefined;
    const dir = join(home, this.layout.session(sessionId));
    const memoryBytes = numberIn(dir, 'memory.usage_in_bytes');
    if (memoryBytes === undefined) return undefined;
    const usage: SessionUsage = { memoryBytes };
    const peak = numberIn(dir, 'memory.max_usage_in_bytes');
    if (peak !== undefined) usage.memoryPeakBytes = peak;
    const cpuacct = this.homes.cpuacct;
    const nanos =
      cpuacct === undefined ? undefined : numberIn(join(cpuacct, this.layout.session(sessionId)), 'cpuacct.usage');
    if (nanos !== undefined) usage.cpuMicros = Math.round(nanos / 1000);
    return usage;
  }
}
