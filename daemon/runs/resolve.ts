/**
 * resolve(): an optional-field request becomes a fully resolved spec, exactly once (docs/sessions.md).
 * Pure: everything it reads is passed in.
 */
import { isAbsolute, resolve as resolvePath } from 'node:path';
import { clampTimeout, type Config } from '../../protocol/config.js';
import type { ExecRequest } from '../../protocol/methods.js';
import type { SandboxPolicy } from '../../protocol/sandbox.js';
import type { ExecSpec } from '../../protocol/types.js';
import { resolveSandboxPolicy } from '../sandbox/session-policy.js';
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
