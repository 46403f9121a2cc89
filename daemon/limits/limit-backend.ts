/**
 * Where resource limits (docs/limits.md) are written: one strategy behind one interface, chosen at start
 * beside the process scopes (process-scopes.ts) — cgroup v2 controllers delegated to the daemon's
 * subtree, the v1 `memory`/`cpu`/`pids` hierarchies, or none. A unit's and a session's cgroups
 * have the same names in every hierarchy: `<home>/execd-<state>/s-<session>/u-<unit>`.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ExecdError } from '../../protocol/errors.js';
import type { LimitReport, LimitsCapability, SessionLimits } from '../../protocol/limits.js';
import type { SessionUsage } from '../../protocol/types.js';

/** One more cgroup a child is born in (a v1 hierarchy besides the scope's): its `cgroup.procs` and the spawner's own. */
export interface CgroupEntry {
  enter: string;
  leave: string;
}

/** The names of the daemon's, a session's and a unit's cgroups, relative to a hierarchy's home. */
export interface CgroupLayout {
  /** `execd-<hash of the state dir>`. */
  base: string;
  session(sessionId: string): string;
  unit(sessionId: string, unit: string): string;
}

/** The limits of one strategy: what it enforces, and the cgroup files it writes and reads. */
export interface LimitBackend {
  /** What is enforced here (`initialize` capabilities, `daemon/status`). */
  readonly capability: LimitsCapability;
  /**
   * With a cgroup v2 delegation the daemon moved into a leaf of its own: the `cgroup.procs` a
   * spawning process returns to. Undefined: its home as before.
   */
  readonly home?: string;
  /** Writes a session's total (`sessionMemoryBytes`, or none); an error when it cannot be written. */
  applySession(sessionId: string, limits: SessionLimits | undefined): ExecdError | undefined;
  /**
   * Makes a unit's cgroups with its limits written: the cgroups besides the scope's that its child
   * must be born in (v1), or an error (fail closed: the command does not run unlimited).
   */
  prepareUnit(sessionId: string, unit: string, limits: SessionLimits): CgroupEntry[] | ExecdError;
  /** What the limits did to a unit (read at its end, before its cgroup goes). */
  report(sessionId: string, unit: string, limits: SessionLimits): LimitReport;
  /** How many processes of a unit the OOM killer took, and forks its `pids` limit refused, so far. */
  counts(sessionId: string, unit: string): LimitCounts;
  /** A session's use of memory and CPU; undefined where its cgroup holds no accounting. */
  usage(sessionId: string): SessionUsage | undefined;
  /** The directories (below each hierarchy's home) to remove once empty, besides the scope's own. */
  readonly extraHomes: readonly string[];
}

/** Counters of what a unit's limits did, for a unit that lives on (a terminal). */
export interface LimitCounts {
  oomKills: number;
  forkRefusals: number;
}

/** The strategy where nothing can be written: no limit is enforced, `reason` says why. */
export class NoLimits implements LimitBackend {
  readonly capability: LimitsCapability;
  readonly extraHomes: readonly string[] = [];
  readonly home: string | undefined = undefined;

  constructor(reason: string) {
    this.capability = { backend: 'none', enforces: [], unavailable: reason };
  }

  applySession(_sessionId: string, limits: SessionLimits | undefined): ExecdError | undefined {
    return limits?.sessionMemoryBytes === undefined ? undefined : unavailable('sessionMemoryBytes', this.capability);
  }

  prepareUnit(): CgroupEntry[] | ExecdError {
    return [];
  }

  report(): LimitReport {
    return {};
  }

  counts(): LimitCounts {
    return { oomKills: 0, forkRefusals: 0 };
  }

  usage(): SessionUsage | undefined {
    return undefined;
  }
}

/** LIMIT_UNAVAILABLE for one limit. */
export function unavailable(name: string, capability: LimitsCapability, detail?: string): ExecdError {
  return new ExecdError(
    'LIMIT_UNAVAILABLE',
    `limits.${name} cannot be enforced here: ${detail ?? capability.unavailable ?? 'no cgroup controller for it'}`,
  );
}

/** Writes a cgroup file; the error's text when it fails. */
export function writeCgroupFile(dir: string, file: string, value: string): string | undefined {
  try {
    writeFileSync(join(dir, file), value);
    return undefined;
  } catch (error) {
    return `${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`;
  }
}

/** Makes a cgroup directory (and its parents); the error's text when it fails. */
export function makeCgroup(dir: string): string | undefined {
  try {
    mkdirSync(dir, { recursive: true });
    return undefined;
  } catch (error) {
    return `${dir}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`;
  }
}

/** A cgroup file's text; undefined when it cannot be read (gone, or no such controller). */
export function readCgroupFile(dir: string, file: string): string | undefined {
  try {
    return readFileSync(join(dir, file), 'utf8');
  } catch {
    return undefined;
  }
}

/** One counter of a flat-keyed cgroup file (`memory.events`, `pids.events`, `cpu.stat`); 0 when absent. */
export function keyedCounter(text: string | undefined, key: string): number {
  const match = text === undefined ? null : new RegExp(`^${key} (\\d+)$`, 'm').exec(text);
  return match ? Number(match[1]) : 0;
}

/** A cgroup file holding one number; undefined when it cannot be read or is not a number (`max`). */
export function numberIn(dir: string, file: string): number | undefined {
  const text = readCgroupFile(dir, file)?.trim();
  if (text === undefined || !/^\d+$/.test(text)) return undefined;
  return Number(text);
}

/** The CFS quota of `cpus` over `periodMicros`: at least 1 ms, as both cgroup versions require. */
export function cpuQuotaMicros(cpus: number, periodMicros: number): number {
  return Math.max(1_000, Math.round(cpus * periodMicros));
}

/** The period of every CPU limit: 100 ms, the kernel's default. */
export const CPU_PERIOD_MICROS = 100_000;

/**
 * The limit an out-of-memory kill of a unit reached: the unit's own when its cgroup hit it (`hitOwn`),
 * else the session's total, else the unit's.
 */
export function oomLimit(limits: SessionLimits, hitOwn: boolean): number | undefined {
  if (hitOwn && limits.memoryBytes !== undefined) return limits.memoryBytes;
  return limits.sessionMemoryBytes ?? limits.memoryBytes;
}
