/**
 * Platform facts, decided in one place (SPEC §7): where the socket and state live, which shell runs
 * a command, and which tool the model gets. Nothing else branches on `process.platform`.
 */
import { homedir, tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

/** The platform facts execd depends on. */
export interface PlatformFacts {
  /** `bash` on POSIX, `pwsh` on Windows. */
  shell: 'bash' | 'pwsh';
  /** The argv that runs one command string, unparsed. */
  shellArgv(command: string): string[];
  /** The default socket path or pipe name. */
  defaultSocketPath(env: NodeJS.ProcessEnv): string;
  /** The default state directory. */
  defaultStateDir(env: NodeJS.ProcessEnv): string;
  /** Whether the transport is a filesystem socket whose directory permissions we enforce. */
  socketIsFile: boolean;
  /** How process trees are killed: POSIX process groups, or tree-kill (taskkill /T). */
  killStrategy: 'process-group' | 'tree-kill';
}

function uid(): number {
  return typeof process.getuid === 'function' ? process.getuid() : 0;
}

const posix: PlatformFacts = {
  shell: 'bash',
  shellArgv: (command) => ['bash', '-c', command],
  defaultSocketPath: (env) =>
    env.XDG_RUNTIME_DIR
      ? join(env.XDG_RUNTIME_DIR, 'execd', 'execd.sock')
      : join(tmpdir(), `execd-${uid()}`, 'execd.sock'),
  defaultStateDir: (env) =>
    env.XDG_STATE_HOME ? join(env.XDG_STATE_HOME, 'execd') : join(homedir(), '.local', 'state', 'execd'),
  socketIsFile: true,
  killStrategy: 'process-group',
};

const windows: PlatformFacts = {
  shell: 'pwsh',
  shellArgv: (command) => ['pwsh', '-NoProfile', '-NonInteractive', '-Command', command],
  defaultSocketPath: () => `\\\\.\\pipe\\execd-${userInfo().username}`,
  defaultStateDir: (env) => join(env.LOCALAPPDATA ?? join(homedir(), 'AppData', 'Local'), 'execd'),
  socketIsFile: false,
  killStrategy: 'tree-kill',
};

/** The facts of a platform (injectable for tests). */
export function platformFacts(platform: NodeJS.Platform = process.platform): PlatformFacts {
  return platform === 'win32' ? windows : posix;
}

/** The facts of the platform this process runs on. */
export const PLATFORM = platformFacts();
