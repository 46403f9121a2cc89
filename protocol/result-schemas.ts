/**
 * zod schemas of the protocol's result values (runs, jobs, reads), shared by the result document
 * (`results.ts`) and the methods that take such a value as params (`render/*`). Built on first use.
 */
import { SANDBOX_BACKENDS, SANDBOX_GUARANTEES, sandboxModeSchema } from './sandbox.js';
import { LIMIT_NAMES, sessionLimitsSchema } from './limits.js';
import { lazySchema, zod } from './zod.js';

/** The fields of a `LimitReport`, added to runs and job snapshots. */
const limitReportFields = () => {
  const z = zod();
  return {
    oomKilled: z.literal(true).optional(),
    oomLimitBytes: z.number().optional(),
    pidsLimitReached: z.number().optional(),
  };
};

/** The schema of a `LimitsCapability`. */
export const limitsCapabilitySchema = lazySchema((z) =>
  z.object({
    backend: z.enum(['cgroup2', 'cgroup1', 'none']),
    enforces: z.array(z.enum(LIMIT_NAMES)),
    unavailable: z.string().optional(),
  }),
);

/** The schema of a session's limits in a result (the params schema, not strict). */
export const limitsResultSchema = () => sessionLimitsSchema();

/** The schema of a `CollectedOutput`. */
export const collectedOutputSchema = lazySchema((z) =>
  z.object({
    text: z.string(),
    truncated: z.boolean(),
    spillPath: z.string().optional(),
    saveError: z.string().optional(),
  }),
);

/** The schema of a `SandboxBackendInfo`. */
export const sandboxBackendInfoSchema = lazySchema((z) =>
  z.object({
    backend: z.enum(SANDBOX_BACKENDS).nullable(),
    enforces: z.array(z.enum(SANDBOX_GUARANTEES)),
    landlockAbi: z.number().optional(),
    unavailable: z.string().optional(),
  }),
);

/** The schema of a `SandboxReport`. */
export const sandboxReportSchema = lazySchema((z) =>
  z.object({
    mode: sandboxModeSchema(),
    denied: z.boolean(),
    enforcement: z.string().optional(),
    runnerFailed: z.boolean().optional(),
  }),
);

/** The schema of a `JobSnapshot`. */
export const jobSnapshotSchema = lazySchema((z) =>
  z.object({
    id: z.string(),
    kind: z.literal('bash'),
    label: z.string(),
    ownerSession: z.string(),
    status: z.enum(['running', 'stopping', 'completed', 'killed', 'failed', 'lost']),
    detail: z.string().optional(),
    pid: z.number(),
    exitCode: z.number().nullable(),
    signal: z.string().nullable(),
    startedAt: z.string(),
    finishedAt: z.string().optional(),
    reported: z.boolean(),
    stdoutBytes: z.number(),
    stderrBytes: z.number(),
    sandbox: sandboxReportSchema().optional(),
    stdoutPath: z.string().optional(),
    stderrPath: z.string().optional(),
    ...limitReportFields(),
  }),
);

/** The schema of one stream of `job/peek`. */
export const peekedStreamSchema = lazySchema((z) =>
  z.object({ text: z.string(), offset: z.number(), nextOffset: z.number(), lossy: z.boolean() }),
);

/** The schema of a `TerminalSnapshot`. */
export const terminalSnapshotSchema = lazySchema((z) =>
  z.object({
    id: z.string(),
    name: z.string().optional(),
    ownerSession: z.string(),
    argv: z.array(z.string()),
    cwd: z.string(),
    pid: z.number(),
    cols: z.number(),
    rows: z.number(),
    status: z.enum(['running', 'exited']),
    exitCode: z.number().nullable(),
    signal: z.string().nullable(),
    detail: z.string().optional(),
    foreground: z.object({ pgid: z.number(), command: z.string() }).optional(),
    busy: z.boolean(),
    startedAt: z.string(),
    exitedAt: z.string().optional(),
    outputBytes: z.number(),
  }),
);

/** The schema of the readiness tier that ended a terminal wait. */
export const waitReasonSchema = lazySchema((z) =>
  z.enum(['prompt', 'stdin_read', 'inferred_idle', 'timeout', 'session_exit', 'not_at_prompt', 'yielded']),
);

/** The schema of a `ShellRunResult`. */
export const shellRunResultSchema = lazySchema((z) =>
  z.object({
    exitCode: z.number().nullable(),
    signal: z.string().nullable(),
    timedOut: z.boolean(),
    aborted: z.boolean(),
    daemonStopped: z.literal(true).optional(),
    timeoutMs: z.number(),
    durationMs: z.number(),
    pid: z.number(),
    stdout: collectedOutputSchema(),
    stderr: collectedOutputSchema(),
    sandbox: sandboxReportSchema().optional(),
    ...limitReportFields(),
  }),
);

/** The schema of a `YieldedRunResult`. */
export const yieldedRunResultSchema = lazySchema((z) =>
  z.object({
    yielded: z.literal(true),
    jobId: z.string(),
    pid: z.number(),
    startedAt: z.string(),
    durationMs: z.number(),
    stdout: collectedOutputSchema(),
    stderr: collectedOutputSchema(),
    sandbox: sandboxReportSchema().optional(),
  }),
);

/** The schema of one stream's part of a `job/read`. */
export const readStreamSchema = lazySchema((z) =>
  z.object({ text: z.string(), from: z.number(), offset: z.number(), nextOffset: z.number() }),
);

/** The schema of a `JobReadResult`. */
export const jobReadResultSchema = lazySchema((z) =>
  z.object({
    delta: z.string(),
    lossy: z.boolean(),
    stdoutSpillPath: z.string().optional(),
    stderrSpillPath: z.string().optional(),
    stdout: readStreamSchema(),
    stderr: readStreamSchema(),
    job: jobSnapshotSchema(),
  }),
);
