/**
 * The daemon's configuration: the one place where defaults live (SPEC §1.1). Read at each command,
 * so a change made at run time applies to the next one.
 */
import { z } from 'zod';
import { absolutePath, positiveInt, positiveNumber as positive } from './fields.js';
import { SandboxModeSchema } from './sandbox.js';

/** Largest delay a Node timer honours. */
export const MAX_TIMER_MS = 2_147_483_647;

/** Every configuration field, its rule and its default. */
export const ConfigSchema = z.strictObject({
  /** Default foreground timeout. */
  timeoutMs: positive().default(120_000),
  /** Cap applied to any per-call `timeoutMs`. */
  maxTimeoutMs: positive().default(600_000),
  /** In-memory capture per stream; past it the stream spills to a file. */
  maxOutputBytes: positive().default(64_000),
  /** Cap of one stream's spill or log file; past it the file is discarded. */
  maxSpillBytes: positive().default(64 * 1024 * 1024),
  /** SIGTERM → SIGKILL grace, and the wait for still-open pipes after exit. */
  graceMs: positive().max(MAX_TIMER_MS, { error: `must be at most ${MAX_TIMER_MS}` }).default(3_000),
  /** Fallback working directory; absent means the daemon's `process.cwd()`. */
  cwd: absolutePath().optional(),
  /** Whether `shell/start` is allowed. */
  enableRunInBackground: z.boolean({ error: 'must be a boolean' }).default(true),
  /** Sandbox mode for a request that names none. */
  defaultSandboxMode: SandboxModeSchema.default('danger-full-access'),
  /** Processes (foreground runs and running jobs) alive at once, across all sessions. */
  maxProcesses: positiveInt().default(128),
  /** Running background jobs per session. */
  maxJobsPerSession: positiveInt().default(32),
  /** Sessions open at once. */
  maxSessions: positiveInt().default(256),
  /** Largest `stdin` payload of one request, in bytes. */
  maxStdinBytes: positiveInt().default(8 * 1024 * 1024),
  /** Largest JSON-RPC message a client may send, in bytes. */
  maxMessageBytes: positiveInt().default(16 * 1024 * 1024),
  /** Total bytes of all spill and log files; the retention sweep removes the oldest past it. */
  spillQuotaBytes: positive().default(4 * 1024 * 1024 * 1024),
  /** Age after which a spill or log file of a settled run or job is removed by the sweep. */
  spillRetentionMs: positive().default(7 * 24 * 3_600_000),
});

/** A fully resolved configuration. */
export type Config = z.output<typeof ConfigSchema>;

/** A partial update, validated field by field (`config/set`, config file, `--config`). */
export const ConfigPatchSchema = ConfigSchema.partial();

/** A partial configuration update. */
export type ConfigPatch = z.input<typeof ConfigPatchSchema>;

/** The built-in defaults. */
export const DEFAULT_CONFIG: Config = Object.freeze(ConfigSchema.parse({}));
