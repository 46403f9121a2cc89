/**
 * resolve(): an optional-field request becomes a fully resolved spec, exactly once (docs/sessions.md).
 * Pure: everything it reads is passed in.
 */
import { isAbsolute, resolve as resolvePath } from 'node:path';
import { clampTimeout, type Config } from '../../protocol/config.js';
import type { ExecRequest } from '../../protocol/methods.js';
import type { SandboxMode, SandboxPolicy } from '../../protocol/sandbox.js';
import type { ExecSpec } from '../../protocol/types.js';
import { buildEnv, type EnvMap } from './env.js';

/** The session facts a request is resolved against. */
export interface SessionFacts {
  id: string;
  cwd?: string;
  env?: EnvMap;
  dshEnv?: EnvMap;
  sandbox?: SandboxPolicy;
}

/** Everything besides the request that resolution reads. */
export interface ResolveContext {
  session: SessionFacts;
  config: Config;
  /** The daemon's `process.cwd()`, the last fallback. */
  daemonCwd: string;
  /** The scrubbed daemon environment. */
  baseEnv: EnvMap;
  shellArgv: (command: string) => string[];
}

/** The working directory: the request's, else the session's cwd, else `config.cwd`, else the daemon's. */
export function resolveWorkdir(requested: string | undefined, ctx: ResolveContext): string {
  const base = ctx.session.cwd ?? ctx.config.cwd ?? ctx.daemonCwd;
  if (requested === undefined) return base;
  return isAbsolute(requested) ? requested : resolvePath(base, requested);
}

/**
 * The sandbox policy: the request's, else the session's, else `config.defaultSandboxMode`. A
 * confined mode always gets a workspace root: the policy's, else the session policy's, else the
 * session's cwd (then `config.cwd`, then the daemon's cwd, like the working directory).
 */
export function resolveSandboxPolicy(requested: SandboxPolicy | undefined, ctx: ResolveContext): SandboxPolicy {
  const { session, config } = ctx;
  const mode: SandboxMode = requested?.mode ?? session.sandbox?.mode ?? config.defaultSandboxMode;
  // `network: 'off'` is the request's, else the session's; `on` is the default and is not spelled out.
  const network = requested?.network ?? session.sandbox?.network;
  const off = network === 'off' ? { network } : {};
  if (mode === 'danger-full-access') return { mode, ...off };
  const workspaceRoot =
    requested?.workspaceRoot ?? session.sandbox?.workspaceRoot ?? session.cwd ?? config.cwd ?? ctx.daemonCwd;
  return { mode, workspaceRoot, ...off };
}

/** The spec a request runs with. The params schema has already refused non-positive values. */
export function resolveSpec(request: ExecRequest, ctx: ResolveContext): ExecSpec {
  const { config, session } = ctx;
  return {
    command: request.command,
    argv: ctx.shellArgv(request.command),
    workdir: resolveWorkdir(request.workdir, ctx),
    timeoutMs: clampTimeout(request.timeoutMs, config),
    stdoutMaxBytes: request.stdoutMaxBytes ?? config.maxOutputBytes,
    env: buildEnv({
      base: ctx.baseEnv,
      sessionEnv: session.env,
      requestEnv: request.env,
      sessionDshEnv: session.dshEnv,
      requestDshEnv: request.dshEnv,
      sessionId: session.id,
    }),
    sandboxPolicy: resolveSandboxPolicy(request.sandboxPolicy, ctx),
  };
}
