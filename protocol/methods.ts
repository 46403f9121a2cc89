/**
 * Every JSON-RPC method of execd, declared exactly once (PROTOCOL.md): its name, its zod params
 * schema and its typed vscode-jsonrpc request. The daemon registers handlers for these objects
 * and the client calls them; no method string appears anywhere else.
 *
 * A declaration holds a builder for its schema and builds it on the first read of `params`: only
 * the daemon validates params, so a client importing this module never loads zod (see `zod.ts`).
 */
import type { z } from 'zod';
import { configPatchSchema, type Config } from './config.js';
import { FS_REQUESTS, FsMkdir, FsMove, FsRemove, FsWrite } from './fs.js';
import { commandSchema } from './command.js';
import {
  absolutePath,
  captureBytes,
  dshEnvMapSchema,
  envMapSchema,
  jobIdSchema,
  nulFreeString,
  positiveInt,
  positiveNumber,
  sessionIdSchema,
} from './fields.js';
import { NotificationType, ProgressType } from './jsonrpc.js';
import { sessionLimitsSchema, unitLimitsSchema } from './limits.js';
import { jobReadResultSchema, shellRunResultSchema } from './result-schemas.js';
import { sandboxModeSchema, sandboxPolicySchema, sessionSandboxSchema, sessionSandboxUpdateSchema } from './sandbox.js';
import type {
  DaemonStatusResult,
  ExecSpec,
  InitializeResult,
  JobCleanResult,
  JobExitedParams,
  JobPeekResult,
  JobReadResult,
  JobSnapshot,
  OutputBytesProgress,
  JobWaitResult,
  OutputProgress,
  OutputReadResult,
  SessionCloseResult,
  SessionOpenResult,
  SessionUpdateResult,
  ShellRunResult,
  ShellStartResult,
  YieldedRunResult,
} from './types.js';
import {
  TERMINAL_SIGNALS,
  type TerminalAttachResult,
  type TerminalCloseResult,
  type TerminalExitedParams,
  type TerminalOpenResult,
  type TerminalOutputParams,
  type TerminalReadResult,
  type TerminalRunResult,
  type TerminalSendResult,
  type TerminalSignalResult,
  type TerminalSnapshot,
  type WriteResult,
} from './terminal.js';
import { keyed, request, type AnyRequestDecl } from './request.js';
import { lazySchema, zod, type Zod } from './zod.js';

export type { AnyRequestDecl, ParamsOf, RequestDecl, ResultOf } from './request.js';

/** The schema of the optional-field request shared by `shell/resolve`, `shell/run` and `shell/start`. */
export const execRequestSchema = lazySchema((z) =>
  z.strictObject({
    sessionId: sessionIdSchema(),
    command: commandSchema(),
    workdir: nulFreeString().min(1, { error: 'must be a non-empty path' }).optional(),
    timeoutMs: positiveNumber().optional(),
    stdoutMaxBytes: captureBytes().optional(),
    stdin: z.string({ error: 'must be a string' }).optional(),
    env: envMapSchema().optional(),
    dshEnv: dshEnvMapSchema().optional(),
    sandboxPolicy: sandboxPolicySchema().optional(),
    /** Lower resource limits for this command than its session's (docs/limits.md). */
    limits: unitLimitsSchema().optional(),
  }),
);

/** An exec request as the daemon receives it. */
export type ExecRequest = z.output<ReturnType<typeof execRequestSchema>>;

const sessionJob = (z: Zod) => z.strictObject({ sessionId: sessionIdSchema(), jobId: jobIdSchema() });
const empty = (z: Zod) => z.strictObject({}).optional();

/** `initialize`: the mandatory first request, carrying the token. */
export const Initialize = request<InitializeResult>()('initialize', (z) =>
  z.object({
    protocolVersion: z.literal(1, { error: 'must be 1' }),
    token: z.string({ error: 'must be a string' }),
    /** The administrative token (`<stateDir>/admin-token`): grants the daemon-wide methods. */
    adminToken: z.string({ error: 'must be a string' }).optional(),
    client: z.object({ name: z.string({ error: 'must be a string' }), version: z.string().optional() }),
  }),
);

/**
 * `session/open`: open a session on this connection, or attach to an existing one unchanged. With
 * only `sessionId` it attaches (SESSION_NOT_FOUND when no such session exists); with facts (`cwd`
 * at least) it creates the session, or attaches when the facts are the ones it has (FORBIDDEN,
 * naming the facts that differ, otherwise: facts change only through `session/update`). With
 * `create: true` and no facts it attaches, or creates a missing session with the daemon's default
 * cwd (`config.cwd`, else its own): what a client that does not share the daemon's file system sends.
 */
export const SessionOpen = request<SessionOpenResult>()('session/open', (z) =>
  z
    .strictObject({
      sessionId: sessionIdSchema(),
      cwd: absolutePath().optional(),
      env: envMapSchema().optional(),
      dshEnv: dshEnvMapSchema().optional(),
      sandbox: sessionSandboxSchema().optional(),
      /** Resource limits of the session's commands (docs/limits.md); absent fields take `defaultLimits`. */
      limits: sessionLimitsSchema().optional(),
      /** Without `cwd`: create a missing session with the daemon's defaults (its cwd), attach an existing one as it is. */
      create: z.literal(true).optional(),
    })
    .refine(
      (params) => params.cwd !== undefined || (!params.env && !params.dshEnv && !params.sandbox && !params.limits),
      {
        error: 'must be given when env, dshEnv or sandbox are, or limits (without facts, session/open only attaches)',
        path: ['cwd'],
      },
    ),
);

/**
 * `session/update`: the one way a session's facts change. `cwd`, `env` and `dshEnv` are replaced;
 * the sandbox (mode, workspace root, escalation targets) and the limits may only be narrowed.
 */
export const SessionUpdate = request<SessionUpdateResult>()('session/update', (z) =>
  z.strictObject({
    sessionId: sessionIdSchema(),
    cwd: absolutePath().optional(),
    env: envMapSchema().optional(),
    dshEnv: dshEnvMapSchema().optional(),
    sandbox: sessionSandboxUpdateSchema().optional(),
    /** Lower resource limits (docs/limits.md): a limit may only be lowered, or set where there was none. */
    limits: sessionLimitsSchema().optional(),
  }),
);

/** `session/close`: kill the session's processes and delete its files. */
export const SessionClose = request<SessionCloseResult>()('session/close', (z) =>
  z.strictObject({ sessionId: sessionIdSchema() }),
);

/** `shell/resolve`: the spec a request would run with, without running it. */
export const ShellResolve = request<ExecSpec>()('shell/resolve', execRequestSchema);

/** How streamed output and written data travel: UTF-8 text, or the exact bytes as base64. */
export const DATA_ENCODINGS = ['text', 'base64'] as const;
/** One of `DATA_ENCODINGS`. */
export type DataEncoding = (typeof DATA_ENCODINGS)[number];
const dataEncoding = (z: Zod) => z.enum(DATA_ENCODINGS, { error: 'must be text or base64' });
const outputToken = (z: Zod) => z.union([z.string(), z.number()], { error: 'must be a string or a number' });

/** The largest `yieldMs` of a `shell/run`: 24 hours. */
export const MAX_YIELD_MS = 86_400_000;

/**
 * `shell/run`: a foreground run; `yieldMs` turns it into a background job of the session when it
 * still runs then (docs/reconnect.md: the answer is a `YieldedRunResult`); `outputToken` asks for `$/progress` streaming. With a token,
 * `outputEncoding: 'base64'` streams the exact bytes, `keepStdinOpen` starts the command with an
 * open stdin that `shell/write` feeds, and `keepCapture: false` deletes what spilled to disk (the
 * caller has every byte already).
 */
export const ShellRun = keyed<ShellRunResult | YieldedRunResult>()('shell/run', (z) =>
  execRequestSchema()
    .extend({
      yieldMs: z
        .number({ error: 'must be a whole number of milliseconds' })
        .int({ error: 'must be a whole number of milliseconds' })
        .min(1, { error: `must be between 1 and ${MAX_YIELD_MS}` })
        .max(MAX_YIELD_MS, { error: `must be between 1 and ${MAX_YIELD_MS}` })
        .optional(),
      outputToken: outputToken(z).optional(),
      outputEncoding: dataEncoding(z).optional(),
      keepStdinOpen: z.boolean({ error: 'must be a boolean' }).optional(),
      keepCapture: z.boolean({ error: 'must be a boolean' }).optional(),
    })
    .superRefine((params, ctx) => {
      const streamedOnly = [
        ['outputEncoding', params.outputEncoding !== undefined],
        ['keepStdinOpen', params.keepStdinOpen === true],
        ['keepCapture', params.keepCapture !== undefined],
      ] as const;
      for (const [field, set] of streamedOnly) {
        if (set && params.outputToken === undefined) {
          ctx.addIssue({ code: 'custom', path: [field], message: 'needs outputToken (a streamed run)' });
        }
      }
      if (params.keepStdinOpen === true && params.stdin !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['stdin'],
          message: 'excludes keepStdinOpen (write it with shell/write)',
        });
      }
      // A run that may yield runs as a job from its start: its output goes to the job's log.
      if (params.yieldMs !== undefined && params.outputToken !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['yieldMs'],
          message: 'excludes outputToken (a yielding run is not streamed; read its job after the yield)',
        });
      }
    }),
);

/**
 * `shell/write`: data for the open stdin of this connection's running `shell/run` with
 * `keepStdinOpen` (named by its `outputToken`); answers once the command's pipe took it (flow
 * control: one write at a time, no size cap); `eof` closes stdin afterwards.
 */
export const ShellWrite = request<WriteResult>()('shell/write', (z) =>
  z.strictObject({
    sessionId: sessionIdSchema(),
    outputToken: outputToken(z),
    data: z.string({ error: 'must be a string' }),
    encoding: dataEncoding(z).optional(),
    eof: z.boolean({ error: 'must be a boolean' }).optional(),
  }),
);

/** `shell/start`: a background job; returns at once. `keepStdinOpen` leaves its stdin open for `job/write`. */
export const ShellStart = keyed<ShellStartResult>()('shell/start', (z) =>
  execRequestSchema().extend({ keepStdinOpen: z.boolean({ error: 'must be a boolean' }).optional() }),
);

/** Longest wait of a `job/read` (`waitMs`). */
export const MAX_READ_WAIT_MS = 30_000;
/** Largest page of an `output/read` or a `job/peek` (`maxBytes`). */
export const MAX_PAGE_BYTES = 1024 * 1024;

const byteOffset = (z: Zod) =>
  z
    .number({ error: 'must be a non-negative integer' })
    .int({ error: 'must be a non-negative integer' })
    .nonnegative({ error: 'must be a non-negative integer' });
const pageBytes = () =>
  positiveInt().max(MAX_PAGE_BYTES, { error: `must be a positive integer up to ${MAX_PAGE_BYTES}` });

/** `job/read`: consuming read of what is new; with `waitMs`, waits for something new first. */
export const JobRead = request<JobReadResult>()('job/read', (z) =>
  sessionJob(z).extend({
    waitMs: z
      .number({ error: `must be a number from 0 to ${MAX_READ_WAIT_MS}` })
      .min(0, { error: `must be a number from 0 to ${MAX_READ_WAIT_MS}` })
      .max(MAX_READ_WAIT_MS, { error: `must be a number from 0 to ${MAX_READ_WAIT_MS}` })
      .optional(),
  }),
);

/** `job/peek`: non-consuming read at explicit offsets, from the log files when memory no longer holds them. */
export const JobPeek = request<JobPeekResult>()('job/peek', (z) =>
  sessionJob(z).extend({
    stdoutOffset: byteOffset(z).optional(),
    stderrOffset: byteOffset(z).optional(),
    maxBytes: pageBytes().optional(),
  }),
);

/** Longest `until.output` pattern of a `job/wait`, in characters. */
export const MAX_WAIT_PATTERN_CHARS = 1_000;

/** `job/wait`: until the job settles, a condition of `until` holds (docs/reconnect.md), or `timeoutMs` passes. */
export const JobWait = request<JobWaitResult>()('job/wait', (z) =>
  sessionJob(z).extend({
    timeoutMs: positiveNumber().optional(),
    until: z
      .strictObject({
        output: z
          .string({ error: 'must be a regular expression' })
          .min(1, { error: 'must be a non-empty regular expression' })
          .max(MAX_WAIT_PATTERN_CHARS, { error: `must be at most ${MAX_WAIT_PATTERN_CHARS} characters` })
          .refine(compiles, { error: 'must be a valid JavaScript regular expression' })
          .optional(),
        port: z
          .number({ error: 'must be a TCP port from 1 to 65535' })
          .int({ error: 'must be a TCP port from 1 to 65535' })
          .min(1, { error: 'must be a TCP port from 1 to 65535' })
          .max(65_535, { error: 'must be a TCP port from 1 to 65535' })
          .optional(),
        path: nulFreeString('must be a path').min(1, { error: 'must be a non-empty path' }).optional(),
      })
      .optional(),
  }),
);

/** True when `pattern` is a regular expression JavaScript compiles (compiling is linear; running may not be). */
function compiles(pattern: string): boolean {
  try {
    new RegExp(pattern, 'm');
    return true;
  } catch {
    return false;
  }
}

/** `job/kill`: resolves once the process tree is gone. */
export const JobKill = keyed<{ killed: boolean }>()('job/kill', sessionJob);

/** `job/list`: one session's jobs, or every job for the debug client. */
export const JobList = request<JobSnapshot[]>()('job/list', (z) =>
  z.union([z.strictObject({ sessionId: sessionIdSchema() }), z.strictObject({ all: z.literal(true) })], {
    error: 'must be { sessionId } or { all: true }',
  }),
);

/** `job/release`: kill if running, forget, delete files. */
export const JobRelease = request<{ released: true }>()('job/release', sessionJob);

/** `job/clean`: release every settled job of one session, or of every session. */
export const JobClean = request<JobCleanResult>()('job/clean', (z) =>
  z.union([z.strictObject({ sessionId: sessionIdSchema() }), z.strictObject({ all: z.literal(true) })], {
    error: 'must be { sessionId } or { all: true }',
  }),
);

/** `job/write`: write to the stdin of a job started with `keepStdinOpen`; `eof` closes it afterwards. */
export const JobWrite = keyed<WriteResult>()('job/write', (z) =>
  sessionJob(z).extend({ data: wellFormedText(z), eof: z.boolean({ error: 'must be a boolean' }).optional() }),
);

/** A string that is valid Unicode (no lone surrogates), so it has one UTF-8 encoding. */
function wellFormedText(z: Zod) {
  return z
    .string({ error: 'must be a string' })
    .refine((text) => !/\p{Cs}/u.test(text), { error: 'must be valid Unicode text (no lone surrogates)' });
}

/** A terminal id, `term-<n>`. */
export const terminalIdSchema = () =>
  zod()
    .string({ error: 'must be a string' })
    .regex(/^term-\d{1,15}$/, { error: 'must look like term-<n>' });

/** A terminal dimension: 1..1000 cells. */
const cells = (z: Zod) =>
  z
    .number({ error: 'must be an integer from 1 to 1000' })
    .int({ error: 'must be an integer from 1 to 1000' })
    .min(1, { error: 'must be an integer from 1 to 1000' })
    .max(1000, { error: 'must be an integer from 1 to 1000' });

/** A string argument of a program: no NUL, which no argv can carry. */
const argString = (z: Zod) =>
  z.string({ error: 'must be a string' }).refine((text) => !text.includes('\0'), { error: 'must not contain NUL' });

const sessionTerminal = (z: Zod) => z.strictObject({ sessionId: sessionIdSchema(), terminalId: terminalIdSchema() });

/** `terminal/open`: a PTY running an interactive bash (or `argv`) in the session's cwd. */
export const TerminalOpen = keyed<TerminalOpenResult>()('terminal/open', (z) =>
  z.strictObject({
    sessionId: sessionIdSchema(),
    name: z
      .string({ error: 'must be a string of 1-128 characters' })
      .min(1, { error: 'must be a string of 1-128 characters' })
      .max(128, { error: 'must be a string of 1-128 characters' })
      .optional(),
    cwd: absolutePath().optional(),
    argv: z
      .array(argString(z), { error: 'must be a non-empty array of strings' })
      .min(1, { error: 'must be a non-empty array of strings' })
      .refine((argv) => argv[0] !== '', { error: 'must start with a program name' })
      .optional(),
    env: envMapSchema().optional(),
    cols: cells(z).optional(),
    rows: cells(z).optional(),
    sandboxPolicy: sandboxPolicySchema().optional(),
    /** Lower resource limits for this terminal than its session's (docs/limits.md). */
    limits: unitLimitsSchema().optional(),
  }),
);

/** `terminal/send`: write text (and Enter with `submit`), wait for a readiness tier. */
export const TerminalSend = keyed<TerminalSendResult>()('terminal/send', (z) =>
  sessionTerminal(z).extend({
    text: wellFormedText(z),
    submit: z.boolean({ error: 'must be a boolean' }).optional(),
    idleMs: positiveNumber().optional(),
    timeoutMs: positiveNumber().optional(),
  }),
);

/**
 * `terminal/run`: the persistent-shell command, wrapped between nonce markers. An empty or blank
 * command types nothing and answers at once, as a shell does for an empty line.
 */
export const TerminalRun = keyed<TerminalRunResult>()('terminal/run', (z) =>
  sessionTerminal(z).extend({
    command: wellFormedText(z).refine((text) => !text.includes('\0'), {
      error: 'must not contain NUL (a shell command cannot hold one)',
    }),
    timeoutMs: positiveNumber().optional(),
    idleMs: positiveNumber().optional(),
    /**
     * A command still going after this many ms is left running: the answer comes with the output so
     * far and `state: 'running'`; `terminal/read` and `terminal/send` collect the rest and the status.
     */
    yieldMs: positiveNumber().optional(),
  }),
);

/** `terminal/read`: the stream from an offset, or the rendered screen; consumes nothing. */
export const TerminalRead = request<TerminalReadResult>()('terminal/read', (z) =>
  sessionTerminal(z).extend({
    offset: z.number().int().nonnegative({ error: 'must be a non-negative integer' }).optional(),
    maxBytes: positiveInt().optional(),
    view: z.enum(['stream', 'screen'], { error: 'must be stream or screen' }).optional(),
  }),
);

/** `terminal/write`: raw input (keys, a person's typing), no waiting. */
export const TerminalWrite = keyed<WriteResult>()('terminal/write', (z) =>
  sessionTerminal(z).extend({ data: wellFormedText(z) }),
);

/** `terminal/signal`: to the foreground process group. */
export const TerminalSignal = request<TerminalSignalResult>()('terminal/signal', (z) =>
  sessionTerminal(z).extend({
    signal: z.enum(TERMINAL_SIGNALS, { error: `must be one of ${TERMINAL_SIGNALS.join(', ')}` }),
  }),
);

/** `terminal/resize`. */
export const TerminalResize = request<TerminalSnapshot>()('terminal/resize', (z) =>
  sessionTerminal(z).extend({ cols: cells(z), rows: cells(z) }),
);

/** `terminal/attach`: `terminal/output` notifications to this connection from `offset` (default: the end). */
export const TerminalAttach = request<TerminalAttachResult>()('terminal/attach', (z) =>
  sessionTerminal(z).extend({
    offset: z.number().int().nonnegative({ error: 'must be a non-negative integer' }).optional(),
  }),
);

/** `terminal/detach`: stop this connection's notifications; the terminal keeps running. */
export const TerminalDetach = request<TerminalAttachResult>()('terminal/detach', (z) =>
  sessionTerminal(z).extend({
    offset: z.number().int().nonnegative({ error: 'must be a non-negative integer' }).optional(),
  }),
);

/** `terminal/close`: resolves once every process on the terminal is gone. */
export const TerminalClose = request<TerminalCloseResult>()('terminal/close', sessionTerminal);

/** `terminal/list`: one session's terminals, or every terminal for the debug client. */
export const TerminalList = request<TerminalSnapshot[]>()('terminal/list', (z) =>
  z.union([z.strictObject({ sessionId: sessionIdSchema() }), z.strictObject({ all: z.literal(true) })], {
    error: 'must be { sessionId } or { all: true }',
  }),
);

/** `output/read`: one page of a spill or log file the daemon reported to the session (docs/jobs.md). */
export const OutputRead = request<OutputReadResult>()('output/read', (z) =>
  z.strictObject({
    sessionId: sessionIdSchema(),
    path: absolutePath(),
    offset: byteOffset(z).optional(),
    maxBytes: pageBytes().optional(),
    /** `base64`: the page's exact bytes in `data` (any boundary), `text` empty. */
    encoding: dataEncoding(z).optional(),
  }),
);

/** `config/get`. */
export const ConfigGet = request<Config>()('config/get', empty);

/** `config/set`: validated field by field; `persist` writes `<stateDir>/config.json`. */
export const ConfigSet = request<Config>()('config/set', (z) =>
  z.strictObject({ patch: configPatchSchema(), persist: z.boolean().optional() }),
);

/** `daemon/status`. */
export const DaemonStatus = request<DaemonStatusResult>()('daemon/status', empty);

/**
 * `daemon/shutdown`: answer, then exit gracefully. `keepJobs` leaves running jobs running for the
 * next daemon on the state dir to adopt (docs/reconnect.md); terminals are closed either way.
 */
export const DaemonShutdown = request<{ ok: true }>()('daemon/shutdown', (z) =>
  z.strictObject({ keepJobs: z.boolean({ error: 'must be a boolean' }).optional() }).optional(),
);

/**
 * `daemon/upgrade` (admin, docs/deployment.md): the daemon replaces its program in place with the
 * one at its path now, under the same pid, keeping its listeners and running jobs. Answered just
 * before the exec with the new program's version; the connection then closes.
 */
export const DaemonUpgrade = request<{ pid: number; version: string; program: string }>()('daemon/upgrade', (z) =>
  z.strictObject({}).optional(),
);

const renderOptions = (z: Zod) => ({
  /** Escalation targets wider than the run's mode: a denial then carries the escalation hint line. */
  escalationTargets: z.array(sandboxModeSchema()).optional(),
});

/** `render/result`: the text the model reads for a `ShellRunResult` (docs/library.md), for non-TypeScript harnesses. */
export const RenderResult = request<{ text: string }>()('render/result', (z) =>
  z.strictObject({ result: shellRunResultSchema(), ...renderOptions(z) }),
);

/** `render/jobRead`: the text the model reads for a `job/read` answer (the `job_output` tool's rendering). */
export const RenderJobRead = request<{ text: string }>()('render/jobRead', (z) =>
  z.strictObject({ read: jobReadResultSchema(), ...renderOptions(z) }),
);

/** Every request, for registration and the unknown-method check. */
export const ALL_REQUESTS = [
  Initialize,
  SessionOpen,
  SessionUpdate,
  SessionClose,
  ShellResolve,
  ShellRun,
  ShellStart,
  ShellWrite,
  JobRead,
  JobPeek,
  JobWait,
  JobKill,
  JobList,
  JobRelease,
  JobClean,
  OutputRead,
  JobWrite,
  TerminalOpen,
  TerminalSend,
  TerminalRun,
  TerminalRead,
  TerminalWrite,
  TerminalSignal,
  TerminalResize,
  TerminalAttach,
  TerminalDetach,
  TerminalClose,
  TerminalList,
  ConfigGet,
  ConfigSet,
  DaemonStatus,
  DaemonShutdown,
  DaemonUpgrade,
  RenderResult,
  RenderJobRead,
  ...FS_REQUESTS,
] as const;

/**
 * The requests with a side effect, which take a `requestKey` (docs/reconnect.md): a repeat of the key in
 * the same session answers the first answer instead of acting again.
 */
export const KEYED_REQUESTS: readonly AnyRequestDecl[] = [
  ShellRun,
  ShellStart,
  JobWrite,
  JobKill,
  TerminalOpen,
  TerminalSend,
  TerminalRun,
  TerminalWrite,
  FsWrite,
  FsMkdir,
  FsRemove,
  FsMove,
];

/** `job/exited`: daemon → client, when a background job settles. */
export const JobExited = new NotificationType<JobExitedParams>('job/exited');

/** `terminal/output`: daemon → attached connections, the terminal's output in order. */
export const TerminalOutput = new NotificationType<TerminalOutputParams>('terminal/output');

/** `terminal/exited`: daemon → the owner session's connections, when a terminal's program exits. */
export const TerminalExited = new NotificationType<TerminalExitedParams>('terminal/exited');

/** The `$/progress` payload type of a streamed `shell/run`. */
export const OutputProgressType = new ProgressType<OutputProgress>();

/** The `$/progress` payload type of a streamed `shell/run` with `outputEncoding: 'base64'`. */
export const OutputBytesProgressType = new ProgressType<OutputBytesProgress>();
