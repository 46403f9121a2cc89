/** The tool's working directory (docs/library.md): the session's identity decides the base, not the daemon. */
import { isAbsolute, resolve } from 'node:path';
import type { SandboxPolicy } from '../../protocol/sandbox.js';

/** The session facts a working directory is resolved against. */
export interface WorkdirBase {
  /** The session's cwd, when the harness knows it. */
  cwd?: string;
  sandbox?: SandboxPolicy;
}

/**
 * The base is the sandbox policy's `workspaceRoot` when the session has one, else its cwd; a
 * relative `workdir` resolves against it, an absolute one is kept. With no base known, the request
 * goes as given and the daemon's fallback applies.
 */
export function resolveWorkdir(workdir: string | undefined, session: WorkdirBase): string | undefined {
  const base = session.sandbox?.workspaceRoot ?? session.cwd;
  if (workdir === undefined) return base;
  if (isAbsolute(workdir) || base === undefined) return workdir;
  return resolve(base, workdir);
}
