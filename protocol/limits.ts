/**
 * Resource limits (docs/limits.md): what a session, and a command within it, may use of memory, CPU and
 * processes. Declared once here; the daemon enforces them through its unit and session cgroups.
 */
import type { z } from 'zod';
import { lazySchema, type Zod } from './zod.js';

/** The smallest memory limit: below it a shell cannot even start. */
export const MIN_MEMORY_BYTES = 4 * 1024 * 1024;
/** The most CPUs a limit may name. */
export const MAX_CPUS = 1024;

/** Every limit a session may carry; a request names the first three. */
export const LIMIT_NAMES = ['memoryBytes', 'cpus', 'pids', 'sessionMemoryBytes'] as const;
/** One of `LIMIT_NAMES`. */
export type LimitName = (typeof LIMIT_NAMES)[number];

const memory = (z: Zod) =>
  z
    .number({ error: `must be a whole number of bytes from ${MIN_MEMORY_BYTES}` })
    .int({ error: `must be a whole number of bytes from ${MIN_MEMORY_BYTES}` })
    .min(MIN_MEMORY_BYTES, { error: `must be a whole number of bytes from ${MIN_MEMORY_BYTES}` })
    .max(Number.MAX_SAFE_INTEGER, { error: `must be a whole number of bytes from ${MIN_MEMORY_BYTES}` });

/** The fields of a unit's limits: one run, job or terminal. */
const unitFields = (z: Zod) => ({
  /** Memory of the unit (its processes together), in bytes; past it the kernel kills one of them. */
  memoryBytes: memory(z).optional(),
  /** A fraction of CPUs (0.5: half of one core's time), over a 100 ms period. */
  cpus: z
    .number({ error: `must be a number of CPUs from 0.01 to ${MAX_CPUS}` })
    .min(0.01, { error: `must be a number of CPUs from 0.01 to ${MAX_CPUS}` })
    .max(MAX_CPUS, { error: `must be a number of CPUs from 0.01 to ${MAX_CPUS}` })
    .optional(),
  /** Processes and threads of the unit at once; a fork past it fails. */
  pids: z
    .number({ error: 'must be a whole number of processes from 1' })
    .int({ error: 'must be a whole number of processes from 1' })
    .min(1, { error: 'must be a whole number of processes from 1' })
    .max(4_194_304, { error: 'must be a whole number of processes up to 4194304' })
    .optional(),
});

/** The schema of a request's limits (`shell/run`, `shell/start`, `terminal/open`): lower than the session's. */
export const unitLimitsSchema = lazySchema((z) => z.strictObject(unitFields(z)));

/** The schema of a session's limits (`session/open`, `session/update`, config `defaultLimits`/`maxLimits`). */
export const sessionLimitsSchema = lazySchema((z) =>
  z.strictObject({
    ...unitFields(z),
    /** Memory of all the session's units together, through the session's cgroup. */
    sessionMemoryBytes: memory(z).optional(),
  }),
);

/** A session's limits. */
export type SessionLimits = z.output<ReturnType<typeof sessionLimitsSchema>>;
/** A request's limits, and the effective limits of one unit. */
export type UnitLimits = z.output<ReturnType<typeof unitLimitsSchema>>;

/** What the daemon can enforce here, in `initialize` capabilities and `daemon/status`. */
export interface LimitsCapability {
  /** The cgroup setup the limits are written to; `none` when no controller can be written. */
  backend: 'cgroup2' | 'cgroup1' | 'none';
  /** The limits that are enforced (a request for another is `LIMIT_UNAVAILABLE` unless `limitsOptional`). */
  enforces: LimitName[];
  /** With `none` or a partial set: why the others are not. */
  unavailable?: string;
}

/** What a unit's limits did to it, reported with its result (runs, jobs, notices). */
export interface LimitReport {
  /** The kernel killed a process of the unit for want of memory. */
  oomKilled?: true;
  /** With `oomKilled`: the limit that was reached, in bytes (the unit's, else the session's). */
  oomLimitBytes?: number;
  /** A fork or clone was refused by the unit's `pids` limit (its value). */
  pidsLimitReached?: number;
}

/** A byte count as `512 MiB`, `1.5 GiB`, `300 KiB` or `100 B`: the size in the rendered markers. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  const shown = Number.isInteger(value) ? String(value) : value.toFixed(1).replace(/\.0$/, '');
  return `${shown} ${units[unit]}`;
}

/**
 * A size as a person writes it (`512M`, `1.5G`, `1048576`, `256MiB`) in bytes; undefined when it
 * is not one. Suffixes are binary (K = 1024).
 */
export function parseSize(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?$/i.exec(text.trim());
  if (!match) return undefined;
  const power = ['', 'k', 'm', 'g', 't'].indexOf(match[2]!.toLowerCase());
  const bytes = Math.round(Number(match[1]) * 1024 ** power);
  return Number.isSafeInteger(bytes) && bytes > 0 ? bytes : undefined;
}
