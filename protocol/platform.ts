/**
 * Platform facts, decided in one place: where the socket and state live, which shell runs
 * a command, which tool the model gets, and how process trees are killed. Nothing else branches on
 * `process.platform`; tests inject the platform and the host instead of depending on the machine.
 */
import type * as Crypto from 'node:crypto';
import { createRequire } from 'node:module';
import { homedir, tmpdir, userInfo } from 'node:os';
import { posix as posixPath, win32 as win32Path } from 'node:path';

/** The platform facts execd depends on. */
export interface PlatformFacts {
  /** The platform these facts are for, as reported by `initialize`. */
  name: NodeJS.Platform;
  /** `bash` on POSIX, `pwsh` on Windows. */
  shell: 'bash' | 'pwsh';
  /** The model-facing tool: `bash` on POSIX, `pwsh` on Windows — never both. */
  toolName: 'bash' | 'pwsh';
  /** The argv that runs one command string, unparsed. */
  shellArgv: (command: string) => string[];
  /**
   * The default socket path or pipe name. On Windows a state dir other than the default adds a
   * suffix derived from it, so that daemons with different state dirs never share a pipe.
   */
  defaultSocketPath(env: NodeJS.ProcessEnv, stateDir?: string): string;
  /** The default state directory. */
  defaultStateDir(env: NodeJS.ProcessEnv): string;
  /** Whether the transport is a filesystem socket whose directory permissions we enforce. */
  socketIsFile: boolean;
  /** How process trees are killed: POSIX process groups, or tree-kill (taskkill /T). */
  killStrategy: 'process-group' | 'tree-kill';
  /** Whether a child is spawned detached, as the leader of its own process group. */
  spawnDetached: boolean;
  /** Whether `/proc` can tell live group members from zombies. */
  hasProc: boolean;
  /**
   * Whether file mode bits say who can access a file. On Windows they do not (access is by ACL,
   * and the per-user profile directories are private already), so 0700 checks are skipped.
   */
  modeBits: boolean;
}

/** The facts of the host that the defaults are built from (injectable for tests). */
export interface HostFacts {
  username(): string;
  homedir(): string;
  tmpdir(): string;
  uid(): number;
}

/** The host this process runs on. */
export const CURRENT_HOST: HostFacts = {
  username: () => userInfo().username,
  homedir,
  tmpdir,
  uid: () => (typeof process.getuid === 'function' ? process.getuid() : 0),
};

/** The pipe-name suffix of a non-default state dir: 8 hex digits of its normalised path. */
export function pipeSuffix(stateDir: string): string {
  const normalised = win32Path.resolve(stateDir).toLowerCase();
  // Required here, not imported: only Windows names pipes, and loading crypto costs every client start.
  const { createHash } = createRequire(import.meta.url)('node:crypto') as typeof Crypto;
  return createHash('sha256').update(normalised).digest('hex').slice(0, 8);
}

function posixFacts(name: NodeJS.Platform, host: HostFacts): PlatformFacts {
  return {
    name,
    shell: 'bash',
    toolName: 'bash',
    shellArgv: (command) => ['bash', '-c', command],
    defaultSocketPath: (env) =>
      env.XDG_RUNTIME_DIR
        ? posixPath.join(env.XDG_RUNTIME_DIR, 'execd', 'execd.sock')
        : posixPath.join(host.tmpdir(), `execd-${host.uid()}`, 'execd.sock'),
    defaultStateDir: (env) =>
      env.XDG_STATE_HOME
        ? posixPath.join(env.XDG_STATE_HOME, 'execd')
        : posixPath.join(host.homedir(), '.local', 'state', 'execd'),
    socketIsFile: true,
    killStrategy: 'process-group',
    spawnDetached: true,
    hasProc: name === 'linux',
    modeBits: true,
  };
}

function windowsFacts(host: HostFacts): PlatformFacts {
  const defaultStateDir = (env: NodeJS.ProcessEnv) =>
    win32Path.join(env.LOCALAPPDATA ?? win32Path.join(host.homedir(), 'AppData', 'Local'), 'execd');
  return {
    name: 'win32',
    shell: 'pwsh',
    toolName: 'pwsh',
    shellArgv: (command) => ['pwsh', '-NoProfile', '-NonInteractive', '-Command', command],
    defaultSocketPath: (env, stateDir) => {
      const base = `\\\\.\\pipe\\execd-${host.username()}`;
      const isDefault = stateDir === undefined || pipeSuffix(stateDir) === pipeSuffix(defaultStateDir(env));
      return isDefault ? base : `${base}-${pipeSuffix(stateDir)}`;
    },
    defaultStateDir,
    socketIsFile: false,
    killStrategy: 'tree-kill',
    // A detached child would get a console of its own; taskkill /T finds the tree without a group.
    spawnDetached: false,
    hasProc: false,
    modeBits: false,
  };
}

/** The facts of a platform (injectable for tests). */
export function platformFacts(
  platform: NodeJS.Platform = process.platform,
  host: HostFacts = CURRENT_HOST,
): PlatformFacts {
  return platform === 'win32' ? windowsFacts(host) : posixFacts(platform, host);
}

/** The facts of the platform this process runs on. */
export const PLATFORM = platformFacts();
