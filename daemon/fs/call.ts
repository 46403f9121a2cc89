/** What one file call runs under: its session's policy and cwd, built once per call. */
import { realpath } from 'node:fs/promises';
import { dirname, normalize } from 'node:path';
import type { DaemonContext } from '../context.js';
import { resolveSandboxPolicy } from '../resolve.js';
import type { Session } from '../sessions.js';
import type { FsPolicy, HiddenTree } from './policy.js';
import { resolveRequestPath } from './policy.js';

/** One call's facts: the method (for messages), the policy and the session's cwd. */
export interface FsCall {
  method: string;
  policy: FsPolicy;
  cwd: string;
}

/** A real path, or the normalized path itself when it does not exist (nothing real lies under it then). */
async function realOrSelf(path: string): Promise<string> {
  return realpath(path).catch(() => normalize(path));
}

const hiddenByDaemon = new WeakMap<DaemonContext, Promise<HiddenTree[]>>();

/** The daemon's hidden trees, resolved once: the state dir and the socket's directory. */
function hiddenTrees(daemon: DaemonContext): Promise<HiddenTree[]> {
  let trees = hiddenByDaemon.get(daemon);
  if (!trees) {
    trees = Promise.all([
      realOrSelf(daemon.stateDir).then((path) => ({ path, what: "the daemon's state directory" })),
      realOrSelf(dirname(daemon.socketPath)).then((path) => ({ path, what: "the daemon's socket directory" })),
    ]);
    hiddenByDaemon.set(daemon, trees);
  }
  return trees;
}

/** The facts of a file call by `session`: its sandbox policy exactly as a command would get it. */
export async function fsCallOf(daemon: DaemonContext, session: Session, method: string): Promise<FsCall> {
  const config = daemon.config.get();
  const cwd = session.cwd;
  const sandbox = resolveSandboxPolicy(undefined, {
    session,
    config,
    daemonCwd: process.cwd(),
    baseEnv: daemon.baseEnv,
    shellArgv: () => [],
  });
  const workspaceRoot = sandbox.workspaceRoot === undefined ? undefined : await realOrSelf(sandbox.workspaceRoot);
  return { method, cwd, policy: { mode: sandbox.mode, workspaceRoot, hidden: await hiddenTrees(daemon) } };
}

/** The call's path, absolute against the session's cwd. */
export function targetOf(call: FsCall, path: string): string {
  return resolveRequestPath(call.cwd, path);
}
