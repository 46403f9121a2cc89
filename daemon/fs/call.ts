/** What one file call runs under: its session's policy and cwd, built once per call. */
import { lstat, readdir, realpath } from 'node:fs/promises';
import { dirname, join, normalize } from 'node:path';
import type { FileId } from '../../shared/proc.js';
import type { DaemonContext } from '../context.js';
import { resolveSandboxPolicy } from '../sandbox/session-policy.js';
import type { Session } from '../sessions/sessions.js';
import type { FsPolicy, HiddenTree } from './policy.js';
import { isHidden, resolveRequestPath } from './policy.js';

/** One call's facts: the method (for messages), the policy and the session's cwd. */
export interface FsCall {
  method: string;
  policy: FsPolicy;
  cwd: string;
  /** The identities of the hidden files, for a file with more than one link (a hard link into a workspace). */
  hiddenFileIds(): Promise<readonly FileId[]>;
}

/** A real path, or the normalized path itself when it does not exist (nothing real lies under it then). */
async function realOrSelf(path: string): Promise<string> {
  return realpath(path).catch(() => normalize(path));
}

const hiddenByDaemon = new WeakMap<DaemonContext, Promise<HiddenTree[]>>();

/**
 * The daemon's hidden trees, resolved once: the state dir, the socket's directory, and each secret
 * file (TLS key, certificate, client CA, an external log file), by the path given and by its real path.
 */
function hiddenTrees(daemon: DaemonContext): Promise<HiddenTree[]> {
  let trees = hiddenByDaemon.get(daemon);
  if (!trees) {
    const secret = "a secret file of the daemon's";
    trees = Promise.all([
      realOrSelf(daemon.stateDir).then((path) => [{ path, what: "the daemon's state directory" }]),
      realOrSelf(dirname(daemon.socketPath)).then((path) => [{ path, what: "the daemon's socket directory" }]),
      ...daemon.secretFiles.map(async (file) => [
        { path: normalize(file), what: secret },
        { path: await realOrSelf(file), what: secret },
      ]),
    ]).then((lists) => lists.flat());
    hiddenByDaemon.set(daemon, trees);
  }
  return trees;
}

/** Whether a real path lies in one of the daemon's hidden trees (what no file method may reach). */
export async function isHiddenPath(daemon: DaemonContext, real: string): Promise<boolean> {
  return isHidden({ mode: 'danger-full-access', hidden: await hiddenTrees(daemon) }, real);
}

/** How long a set of hidden files' identities is reused (a burst of reads of hard-linked files pays once). */
const HIDDEN_IDS_TTL_MS = 1_000;
const hiddenIdsByDaemon = new WeakMap<DaemonContext, { at: number; ids: Promise<FileId[]> }>();

/**
 * The device and inode of every file the file methods hide: the files of the state dir and of
 * each session's spill directory, and the secret files. A hard link to one of them, anywhere, is
 * the same inode, so a read through it is refused however it is named.
 */
function hiddenFileIds(daemon: DaemonContext): Promise<FileId[]> {
  const cached = hiddenIdsByDaemon.get(daemon);
  if (cached && Date.now() - cached.at < HIDDEN_IDS_TTL_MS) return cached.ids;
  const ids = (async () => {
    const files = [...daemon.secretFiles];
    const listed = async (dir: string) => (await readdir(dir).catch(() => [])).map((name) => join(dir, name));
    files.push(...(await listed(daemon.stateDir)));
    for (const session of await listed(daemon.paths.spill)) files.push(...(await listed(session)));
    const stats = await Promise.all(files.map((file) => lstat(file).catch(() => undefined)));
    return stats.filter((info) => info?.isFile()).map((info) => ({ dev: info!.dev, ino: info!.ino }));
  })();
  hiddenIdsByDaemon.set(daemon, { at: Date.now(), ids });
  return ids;
}

/** The facts of a file call by `session`: its sandbox policy exactly as a command would get it. */
export async function fsCallOf(daemon: DaemonContext, session: Session, method: string): Promise<FsCall> {
  const config = daemon.config.get();
  const cwd = session.cwd;
  const sandbox = resolveSandboxPolicy(undefined, { session, config, daemonCwd: process.cwd() });
  const workspaceRoot = sandbox.workspaceRoot === undefined ? undefined : await realOrSelf(sandbox.workspaceRoot);
  const policy: FsPolicy = { mode: sandbox.mode, workspaceRoot, hidden: await hiddenTrees(daemon) };
  // A root daemon's confined commands run without capabilities: its file methods read as they would.
  if (process.geteuid?.() === 0 && sandbox.mode !== 'danger-full-access')
    policy.withoutCapabilities = { uid: 0, groups: process.getgroups?.() ?? [0] };
  return { method, cwd, policy, hiddenFileIds: () => hiddenFileIds(daemon) };
}

/** The call's path, absolute against the session's cwd. */
export function targetOf(call: FsCall, path: string): string {
  return resolveRequestPath(call.cwd, path);
}
