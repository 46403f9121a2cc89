/**
 * The daemon's configuration: the one place where defaults live (docs/configuration.md). Read at each command,
 * so a change made at run time applies to the next one.
 */
import type { z } from 'zod';
import { absolutePath, MAX_CAPTURE_BYTES, positiveInt, positiveNumber as positive } from './fields.js';
import { sessionLimitsSchema } from './limits.js';
import { sandboxBackendChoiceSchema, sandboxModeSchema } from './sandbox.js';
import { lazySchema, type Zod } from './zod.js';

/** Largest delay a Node timer honours. */
export const MAX_TIMER_MS = 2_147_483_647;

/** Every configuration field and its rule. */
const configFields = (z: Zod) => ({
  /** Default foreground timeout. */
  timeoutMs: positive(),
  /** Cap applied to any per-call `timeoutMs`. */
  maxTimeoutMs: positive(),
  /** In-memory capture per stream; past it the stream spills to a file. At most `MAX_CAPTURE_BYTES`. */
  maxOutputBytes: positive().max(MAX_CAPTURE_BYTES, { error: `must be at most ${MAX_CAPTURE_BYTES}` }),
  /** Cap of one stream's spill or log file; past it the file is discarded. */
  maxSpillBytes: positive(),
  /** SIGTERM → SIGKILL grace, and the wait for still-open pipes after exit. */
  graceMs: positive().max(MAX_TIMER_MS, { error: `must be at most ${MAX_TIMER_MS}` }),
  /** Fallback working directory; absent means the daemon's `process.cwd()`. */
  cwd: absolutePath().optional(),
  /** Whether `shell/start` is allowed. */
  enableRunInBackground: z.boolean({ error: 'must be a boolean' }),
  /** Sandbox mode for a request that names none. */
  defaultSandboxMode: sandboxModeSchema(),
  /** The sandbox runner, chosen once at start: `auto` probes bubblewrap and falls back to Landlock. */
  sandboxBackend: sandboxBackendChoiceSchema(),
  /** Processes (foreground runs, running jobs, leftovers) alive at once, across all sessions. */
  maxProcesses: positiveInt(),
  /** Running background jobs per session. */
  maxJobsPerSession: positiveInt(),
  /** Sessions open at once. */
  maxSessions: positiveInt(),
  /** Largest `stdin` payload of one request, in bytes. */
  maxStdinBytes: positiveInt(),
  /** Largest JSON-RPC message a client may send, in bytes. */
  maxMessageBytes: positiveInt(),
  /** Output queued for one client that it has not read yet; past it that connection is closed. */
  maxUnsentBytes: positiveInt(),
  /** How long a client may read nothing while output waits for it (streamed runs pause meanwhile). */
  unreadTimeoutMs: positive().max(MAX_TIMER_MS, { error: `must be at most ${MAX_TIMER_MS}` }),
  /** Total bytes of all spill and log files; the retention sweep removes the oldest past it. */
  spillQuotaBytes: positive(),
  /** Age after which a spill or log file of a settled run or job is removed by the sweep. */
  spillRetentionMs: positive(),
  /** Client connections at once (authenticated or not); one more is refused. */
  maxConnections: positiveInt(),
  /** Time a new connection has to send a valid `initialize`; past it the connection is closed. */
  handshakeTimeoutMs: positive().max(MAX_TIMER_MS, { error: `must be at most ${MAX_TIMER_MS}` }),
  /** Settled jobs kept in the table; past it the oldest settled ones are released with their files. */
  maxSettledJobs: positiveInt(),
  /** Age (since it settled) after which a settled job is released with its files. */
  settledJobRetentionMs: positive(),
  /** A session with no connection, nothing running and no activity for this long is closed. */
  sessionIdleCloseMs: positive(),
  /** Terminals (running) per session. */
  maxTerminalsPerSession: positiveInt(),
  /** Terminals (running) across all sessions. */
  maxTerminals: positiveInt(),
  /** Scrollback ring of one terminal, in bytes, addressed by stream offsets. */
  terminalScrollbackBytes: positiveInt(),
  /** Largest input of one `terminal/send`, `run` or `write`, and of what may wait unread for one terminal. */
  maxTerminalInputBytes: positiveInt(),
  /** Exited terminals kept listed across all sessions; past it the oldest are forgotten with their output. */
  maxExitedTerminals: positiveInt(),
  /** A terminal with no send, write or attach for this long and no foreground command is closed. */
  terminalIdleCloseMs: positive().max(MAX_TIMER_MS, { error: `must be at most ${MAX_TIMER_MS}` }),
  /** Unread `job/write` bytes queued for all jobs of all sessions together; past it writes are refused. */
  maxTotalStdinBytes: positiveInt(),
  /** How long a session remembers a `requestKey` and its answer (docs/reconnect.md). */
  requestKeyRetentionMs: positive(),
  /** Request keys one session remembers; past it the oldest answered ones are forgotten. */
  maxRequestKeysPerSession: positiveInt(),
  /** Bytes of remembered answers (their JSON) per session; past it the oldest answered ones are forgotten. */
  maxRequestKeyBytesPerSession: positiveInt(),
  /** Bytes of remembered answers across all sessions; past it the oldest answers are dropped, their keys kept. */
  maxRequestKeyBytes: positiveInt(),
  /** How long a keyed `shell/run` or `terminal/run` outlives its closed connection, waiting to be collected; 0: aborted at once. */
  reconnectGraceMs: z
    .number({ error: 'must be a number from 0' })
    .min(0, { error: 'must be a number from 0' })
    .max(MAX_TIMER_MS, { error: `must be at most ${MAX_TIMER_MS}` }),
  /** `fs/watch` watches alive at once per session. */
  maxWatchesPerSession: positiveInt(),
  /** Directories (one inotify watch each) of one session's `fs/watch` watches together. */
  maxWatchedDirsPerSession: positiveInt(),
  /** Directories of every `fs/watch` watch of the daemon; kept below half the user's inotify watches. */
  maxWatchedDirs: positiveInt(),
  /** Uploads and downloads (`fs/upload/*`, `fs/download/*`) open at once, across all connections. */
  maxFsTransfers: positiveInt(),
  /** A transfer that no call and no stream byte touched for this long is ended (temp file removed, slot freed). */
  fsTransferIdleMs: positive().max(MAX_TIMER_MS, { error: `must be at most ${MAX_TIMER_MS}` }),
  /** Entries (files, directories, links) of one tar upload; one more refuses the archive. */
  maxTreeEntries: positiveInt(),
  /** Bytes of all regular files of one tar upload together. */
  maxTreeBytes: positiveInt(),
  /** Bytes of one regular file of a tar upload. */
  maxTreeFileBytes: positiveInt(),
  /** Network peers (TLS handshake or before `initialize`) at once; past it the oldest stranger is dropped. */
  maxPreAuthConnections: positiveInt(),
  /** Of those, from one remote address. */
  maxPreAuthPerAddress: positiveInt(),
  /** Connection slots of `maxConnections` that only the local socket may take. */
  localConnectionReserve: z
    .number({ error: 'must be a non-negative integer' })
    .int({ error: 'must be a non-negative integer' })
    .nonnegative({ error: 'must be a non-negative integer' }),
  /** Size of the daemon's log file past which it is rotated (`execd.log` → `execd.log.1`). */
  logMaxBytes: positiveInt(),
  /** Rotated log files kept besides the current one. */
  logMaxFiles: z
    .number({ error: 'must be a non-negative integer' })
    .int({ error: 'must be a non-negative integer' })
    .nonnegative({ error: 'must be a non-negative integer' }),
  /** Resource limits (docs/limits.md) of a session that names none of its own, field by field. */
  defaultLimits: sessionLimitsSchema().optional(),
  /** The highest limits a session or request may ask for; a higher one is refused, naming it. */
  maxLimits: sessionLimitsSchema().optional(),
  /** True: a limit no cgroup here can enforce is dropped instead of refused (`LIMIT_UNAVAILABLE`). */
  limitsOptional: z.boolean({ error: 'must be a boolean' }),
  /** Processes (runs, jobs, terminals, leftovers, escaped groups) of one session at once; within `maxProcesses`. */
  maxProcessesPerSession: positiveInt(),
  /** Uploads and downloads open at once per session; within `maxFsTransfers`. */
  maxFsTransfersPerSession: positiveInt(),
  /** `job/wait` calls waiting at once per session; one more is refused. */
  maxWaitsPerSession: positiveInt(),
  /** `job/wait` calls waiting at once across all sessions. */
  maxWaits: positiveInt(),
});

/** The schema of a complete configuration: every field present (but `cwd`); built on first use. */
export const configSchema = lazySchema((z) => z.strictObject(configFields(z)));

/** A fully resolved configuration. */
export type Config = z.output<ReturnType<typeof configSchema>>;

/**
 * The schema of a partial update, validated field by field (`config/set`, config file, `--config`).
 * An optional field (`cwd`, `defaultLimits`, `maxLimits`) may be `null`: the update unsets it.
 */
export const configPatchSchema = lazySchema(() =>
  configSchema().partial().extend({
    cwd: absolutePath().nullable().optional(),
    defaultLimits: sessionLimitsSchema().nullable().optional(),
    maxLimits: sessionLimitsSchema().nullable().optional(),
  }),
);

/** A partial configuration update. */
export type ConfigPatch = z.input<ReturnType<typeof configPatchSchema>>;

/** The built-in defaults: the one place they live. */
export const DEFAULT_CONFIG: Config = Object.freeze({
  timeoutMs: 120_000,
  maxTimeoutMs: 600_000,
  maxOutputBytes: 64_000,
  maxSpillBytes: 64 * 1024 * 1024,
  graceMs: 3_000,
  enableRunInBackground: true,
  defaultSandboxMode: 'danger-full-access',
  sandboxBackend: 'auto',
  maxProcesses: 128,
  maxJobsPerSession: 32,
  maxSessions: 256,
  maxStdinBytes: 8 * 1024 * 1024,
  maxMessageBytes: 16 * 1024 * 1024,
  maxUnsentBytes: 16 * 1024 * 1024,
  unreadTimeoutMs: 30_000,
  spillQuotaBytes: 4 * 1024 * 1024 * 1024,
  spillRetentionMs: 7 * 24 * 3_600_000,
  maxConnections: 256,
  handshakeTimeoutMs: 5_000,
  maxSettledJobs: 1_000,
  settledJobRetentionMs: 7 * 24 * 3_600_000,
  sessionIdleCloseMs: 24 * 3_600_000,
  maxTerminalsPerSession: 8,
  maxTerminals: 64,
  terminalScrollbackBytes: 4 * 1024 * 1024,
  maxTerminalInputBytes: 1024 * 1024,
  maxExitedTerminals: 32,
  terminalIdleCloseMs: 3_600_000,
  maxTotalStdinBytes: 64 * 1024 * 1024,
  requestKeyRetentionMs: 600_000,
  maxRequestKeysPerSession: 1_000,
  maxRequestKeyBytesPerSession: 8 * 1024 * 1024,
  maxRequestKeyBytes: 64 * 1024 * 1024,
  reconnectGraceMs: 30_000,
  maxWatchesPerSession: 32,
  maxWatchedDirsPerSession: 10_000,
  maxWatchedDirs: 65_536,
  maxFsTransfers: 16,
  fsTransferIdleMs: 60_000,
  maxTreeEntries: 250_000,
  maxTreeBytes: 16 * 1024 ** 3,
  maxTreeFileBytes: 4 * 1024 ** 3,
  maxPreAuthConnections: 64,
  maxPreAuthPerAddress: 16,
  localConnectionReserve: 32,
  logMaxBytes: 16 * 1024 * 1024,
  logMaxFiles: 3,
  limitsOptional: false,
  maxProcessesPerSession: 64,
  maxFsTransfersPerSession: 8,
  maxWaitsPerSession: 64,
  maxWaits: 512,
});

/** `base` with `patch` applied: later wins, and a `null` (an optional field such as `cwd`) removes the field. */
export function mergeConfigPatch(base: object, patch: ConfigPatch): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...base };
  // `unknown`: a key may be present with the value undefined, which the inferred value type omits.
  for (const [key, value] of Object.entries<unknown>(patch)) {
    if (value === null) delete merged[key];
    else if (value !== undefined) merged[key] = value;
  }
  return merged;
}

/**
 * The fields a session is bound by for its own commands, where a lower value is the narrower one:
 * a lowered value applies at once to every open session, a raised one only to sessions opened after.
 */
export const NARROWING_FIELDS = [
  'timeoutMs',
  'maxTimeoutMs',
  'maxOutputBytes',
  'maxSpillBytes',
  'graceMs',
  'maxJobsPerSession',
  'maxStdinBytes',
  'maxTerminalsPerSession',
  'maxTerminalInputBytes',
  'maxWatchesPerSession',
  'maxProcessesPerSession',
  'maxFsTransfersPerSession',
  'maxWaitsPerSession',
  'maxTreeEntries',
  'maxTreeBytes',
  'maxTreeFileBytes',
] as const satisfies ReadonlyArray<keyof Config>;

/**
 * The configuration a session's call is bound by: the session's snapshot (taken at open), narrowed
 * by the live configuration. A change that narrows (a `NARROWING_FIELDS` value lowered,
 * `enableRunInBackground` turned off) holds at once; one that widens waits for the next session,
 * so no `config/set` widens an open session while an operator can always tighten a running daemon.
 * Every other field (defaults such as `cwd`, `defaultSandboxMode`) is the snapshot's.
 */
export function boundConfig(snapshot: Config, live: Config): Config {
  const bound: Config = {
    ...snapshot,
    enableRunInBackground: snapshot.enableRunInBackground && live.enableRunInBackground,
  };
  for (const field of NARROWING_FIELDS) bound[field] = Math.min(snapshot[field], live[field]);
  return bound;
}

/** The timeout a command runs with: the request's, else `timeoutMs`, capped by `maxTimeoutMs`. */
export function clampTimeout(
  requested: number | undefined,
  config: Pick<Config, 'timeoutMs' | 'maxTimeoutMs'>,
): number {
  return Math.min(requested ?? config.timeoutMs, config.maxTimeoutMs);
}
