/**
 * Every JSON-RPC method of execd, declared exactly once (SPEC §2.1): its name, its zod params
 * schema and its typed vscode-jsonrpc request. The daemon registers handlers for these objects
 * and the client calls them; no method string appears anywhere else.
 */
import { NotificationType, ProgressType, RequestType } from 'vscode-jsonrpc';
import { z } from 'zod';
import { ConfigPatchSchema, type Config } from './config.js';
import type { ErrorData } from './errors.js';
import {
  absolutePath,
  DshEnvMapSchema,
  EnvMapSchema,
  JobIdSchema,
  positiveInt,
  positiveNumber,
  SessionIdSchema,
} from './fields.js';
import { SandboxPolicySchema } from './sandbox.js';
import type {
  DaemonStatusResult,
  ExecSpec,
  InitializeResult,
  JobExitedParams,
  JobPeekResult,
  JobReadResult,
  JobSnapshot,
  OutputProgress,
  SessionCloseResult,
  SessionOpenResult,
  ShellRunResult,
  ShellStartResult,
} from './types.js';

/** A request declaration: the method name, its params schema and its typed request. */
export interface RequestDecl<S extends z.ZodType, R> {
  method: string;
  params: S;
  type: RequestType<z.output<S>, R, ErrorData>;
}

/**
 * Declares a request. Curried so that the result type is written and the params type is inferred
 * from the schema: `request<ShellRunResult>()('shell/run', schema)`.
 */
function request<R>() {
  return <S extends z.ZodType>(method: string, params: S): RequestDecl<S, R> => ({
    method,
    params,
    type: new RequestType<z.output<S>, R, ErrorData>(method),
  });
}

/** Any request declaration. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRequestDecl = RequestDecl<z.ZodType, any>;
/** Params of a declared request, as a client writes them. */
export type ParamsOf<D> = D extends RequestDecl<infer S, unknown> ? z.input<S> : never;
/** Result of a declared request. */
export type ResultOf<D> = D extends RequestDecl<z.ZodType, infer R> ? R : never;

/** The optional-field request shared by `shell/resolve`, `shell/run` and `shell/start`. */
export const ExecRequestSchema = z.strictObject({
  sessionId: SessionIdSchema,
  command: z.string({ error: 'must be a non-empty string' }).min(1, { error: 'must be a non-empty string' }),
  workdir: z.string({ error: 'must be a string' }).min(1, { error: 'must be a non-empty path' }).optional(),
  timeoutMs: positiveNumber().optional(),
  stdoutMaxBytes: positiveInt().optional(),
  stdin: z.string({ error: 'must be a string' }).optional(),
  env: EnvMapSchema.optional(),
  dshEnv: DshEnvMapSchema.optional(),
  sandboxPolicy: SandboxPolicySchema.optional(),
});

/** An exec request as the daemon receives it. */
export type ExecRequest = z.output<typeof ExecRequestSchema>;

const SessionJob = z.strictObject({ sessionId: SessionIdSchema, jobId: JobIdSchema });
const Empty = z.strictObject({}).optional();

/** `initialize`: the mandatory first request, carrying the token. */
export const Initialize = request<InitializeResult>()(
  'initialize',
  z.object({
    protocolVersion: z.literal(1, { error: 'must be 1' }),
    token: z.string({ error: 'must be a string' }),
    client: z.object({ name: z.string({ error: 'must be a string' }), version: z.string().optional() }),
  }),
);

/** `session/open`: open (or reattach to) a session on this connection. */
export const SessionOpen = request<SessionOpenResult>()(
  'session/open',
  z.strictObject({
    sessionId: SessionIdSchema,
    cwd: absolutePath(),
    env: EnvMapSchema.optional(),
    dshEnv: DshEnvMapSchema.optional(),
    sandbox: SandboxPolicySchema.optional(),
  }),
);

/** `session/close`: kill the session's processes and delete its files. */
export const SessionClose = request<SessionCloseResult>()(
  'session/close',
  z.strictObject({ sessionId: SessionIdSchema }),
);

/** `shell/resolve`: the spec a request would run with, without running it. */
export const ShellResolve = request<ExecSpec>()('shell/resolve', ExecRequestSchema);

/** `shell/run`: a foreground run; `outputToken` asks for `$/progress` streaming. */
export const ShellRun = request<ShellRunResult>()(
  'shell/run',
  ExecRequestSchema.extend({ outputToken: z.union([z.string(), z.number()]).optional() }),
);

/** `shell/start`: a background job; returns at once. */
export const ShellStart = request<ShellStartResult>()('shell/start', ExecRequestSchema);

/** `job/read`: consuming read of what is new. */
export const JobRead = request<JobReadResult>()('job/read', SessionJob);

/** `job/peek`: non-consuming read at explicit offsets. */
export const JobPeek = request<JobPeekResult>()(
  'job/peek',
  SessionJob.extend({
    stdoutOffset: z.number().int().nonnegative({ error: 'must be a non-negative integer' }).optional(),
    stderrOffset: z.number().int().nonnegative({ error: 'must be a non-negative integer' }).optional(),
  }),
);

/** `job/wait`: until the job settles or `timeoutMs` passes. */
export const JobWait = request<JobSnapshot>()(
  'job/wait',
  SessionJob.extend({ timeoutMs: positiveNumber().optional() }),
);

/** `job/kill`: resolves once the process tree is gone. */
export const JobKill = request<{ killed: boolean }>()('job/kill', SessionJob);

/** `job/list`: one session's jobs, or every job for the debug client. */
export const JobList = request<JobSnapshot[]>()(
  'job/list',
  z.union([z.strictObject({ sessionId: SessionIdSchema }), z.strictObject({ all: z.literal(true) })], {
    error: 'must be { sessionId } or { all: true }',
  }),
);

/** `job/release`: kill if running, forget, delete files. */
export const JobRelease = request<{ released: true }>()('job/release', SessionJob);

/** `config/get`. */
export const ConfigGet = request<Config>()('config/get', Empty);

/** `config/set`: validated field by field; `persist` writes `<stateDir>/config.json`. */
export const ConfigSet = request<Config>()(
  'config/set',
  z.strictObject({ patch: ConfigPatchSchema, persist: z.boolean().optional() }),
);

/** `daemon/status`. */
export const DaemonStatus = request<DaemonStatusResult>()('daemon/status', Empty);

/** `daemon/shutdown`: answer, then exit gracefully. */
export const DaemonShutdown = request<{ ok: true }>()('daemon/shutdown', Empty);

/** Every request, for registration and the unknown-method check. */
export const ALL_REQUESTS = [
  Initialize,
  SessionOpen,
  SessionClose,
  ShellResolve,
  ShellRun,
  ShellStart,
  JobRead,
  JobPeek,
  JobWait,
  JobKill,
  JobList,
  JobRelease,
  ConfigGet,
  ConfigSet,
  DaemonStatus,
  DaemonShutdown,
] as const;

/** `job/exited`: daemon → client, when a background job settles. */
export const JobExited = new NotificationType<JobExitedParams>('job/exited');

/** The `$/progress` payload type of a streamed `shell/run`. */
export const OutputProgressType = new ProgressType<OutputProgress>();
