/**
 * A real daemon for a test: the built `execd serve` in a subprocess, on a temporary socket and
 * state dir, stopped and cleaned up when the test finishes — also when it fails.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { onTestFinished } from 'vitest';
import { connect } from '../../client/connect.js';
import { type ConnectOptions, type ExecdClient } from '../../client/connection.js';
import { SessionOpen } from '../../protocol/methods.js';
import { waitFor } from './wait.js';
import { pidAlive } from './procs.js';
import { removeLeftCgroups } from '../../daemon/processes/process-scopes.js';

/** How long a finished test's daemon gets to shut down gracefully before it is killed. */
const STOP_TIMEOUT_MS = 30_000;

/** The bundled CLI entry (deploy/bundle.mjs): the `execd` that users run and that starts daemons. */
export const CLI = join(import.meta.dirname, '..', '..', 'dist', 'bundle', 'main.js');

/** Options of a test daemon. */
export interface TestDaemonOptions {
  /** Extra environment of the daemon process. */
  env?: Record<string, string>;
  /** `--config KEY=VALUE` flags. */
  config?: Record<string, unknown>;
  /** Reuse a state dir (restart scenarios); default: a fresh one. */
  stateDir?: string;
  /** Reuse a socket path; default: a fresh one. */
  socketPath?: string;
  extraArgs?: string[];
  /** A command that execs the daemon's argv appended to it (e.g. to start it in a namespace). */
  launcher?: string[];
  /** The `execd` entry to run (default: the built bundle's `CLI`). */
  cli?: string;
}

/** A daemon started for a test. */
export interface TestDaemon {
  dir: string;
  socketPath: string;
  stateDir: string;
  proc: ChildProcess;
  pid: number;
  /** What the daemon wrote to stderr (its log in the foreground). */
  stderr(): string;
  /** Connects an authenticated client, closed when the test finishes. */
  connect(options?: ConnectOptions): Promise<ExecdClient>;
  /** Connects and opens a session with `cwd` (default: the temp dir), or attaches to it when it exists. */
  session(sessionId: string, cwd?: string): Promise<ExecdClient>;
  /** SIGTERM and wait for the exit; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL (a crash) and wait for the exit. */
  crash(): Promise<void>;
}

function exited(proc: ChildProcess): Promise<number | null> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve(proc.exitCode);
  return new Promise((resolve) => proc.once('exit', (code) => resolve(code)));
}

/**
 * Lets another user reach `path`: each directory above it that others cannot search (a checkout
 * under a `mktemp -d` directory, mode 0700) gets o+x, search without listing. It is not taken
 * back: another test file running at the same time may need it too.
 */
function searchableForOthers(path: string): void {
  for (let dir = dirname(path); dir !== dirname(dir); dir = dirname(dir)) {
    const mode = statSync(dir).mode & 0o7777;
    if ((mode & 0o001) === 0) chmodSync(dir, mode | 0o001);
  }
}

/** Starts a daemon for the current test. */
export async function startDaemon(options: TestDaemonOptions = {}): Promise<TestDaemon> {
  const dir = mkdtempSync(join(tmpdir(), 'execd-test-'));
  const socketPath = options.socketPath ?? join(dir, 'run', 'execd.sock');
  const stateDir = options.stateDir ?? join(dir, 'state');
  const args = [options.cli ?? CLI, 'serve', '--socket', socketPath, '--state-dir', stateDir, '--log-level', 'debug'];
  for (const [key, value] of Object.entries(options.config ?? {}))
    args.push('--config', `${key}=${JSON.stringify(value)}`);
  args.push(...(options.extraArgs ?? []));
  const env: NodeJS.ProcessEnv = { ...process.env, ...options.env };
  delete env.EXECD_SOCKET;
  delete env.EXECD_STATE_DIR;
  delete env.EXECD_TOKEN;
  const launcher = options.launcher ?? [];
  // A launcher may run the daemon as another user (test/helpers/unprivileged.sh: uid 1000).
  if (launcher.length > 0) searchableForOthers(CLI);
  const proc =
    launcher.length > 0
      ? spawn(launcher[0]!, [...launcher.slice(1), process.execPath, ...args], {
          env,
          stdio: ['ignore', 'ignore', 'pipe'],
        })
      : spawn(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const clients: ExecdClient[] = [];

  const daemon: TestDaemon = {
    dir,
    socketPath,
    stateDir,
    proc,
    pid: proc.pid!,
    stderr: () => stderr,
    async connect(connectOptions = {}) {
      // Tests drive the daemon as its owner (admin); a test of an ordinary connection passes admin: false.
      const client = await connect({ socketPath, stateDir, clientName: 'test', admin: true, ...connectOptions });
      clients.push(client);
      return client;
    },
    async session(sessionId, cwd = dir) {
      const client = await daemon.connect();
      // A session another client (a tool) already opened is attached to as it is (SPEC §6).
      const existing = await client.call(SessionOpen, { sessionId }).catch(() => undefined);
      if (!existing) await client.call(SessionOpen, { sessionId, cwd });
      return client;
    },
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      return exited(proc);
    },
    async crash() {
      proc.kill('SIGKILL');
      await exited(proc);
    },
  };

  onTestFinished(async () => {
    for (const client of clients) client.close();
    // A daemon whose graceful shutdown hangs fails its own test; it must not outlive it.
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<false>((resolve) => (timer = setTimeout(resolve, STOP_TIMEOUT_MS, false)));
    const stopped = await Promise.race([daemon.stop().then(() => true), stuck]);
    clearTimeout(timer);
    if (!stopped) await daemon.crash();
    // A daemon killed with -9 (a crash test) leaves its cgroups; nothing else would remove them.
    removeLeftCgroups(stateDir);
    rmSync(dir, { recursive: true, force: true });
  });

  await waitFor(
    () => {
      if (proc.exitCode !== null) throw new Error(`daemon exited early (${proc.exitCode}): ${stderr}`);
      return stderr.includes('"msg":"listening"');
    },
    'the daemon to listen',
    // Start-up includes the sandbox probe; a loaded machine may take many seconds.
    { timeoutMs: 60_000 },
  );
  return daemon;
}

/** Waits until none of `pids` is alive; returns the ones still alive after the wait (empty = good). */
export async function waitPidsGone(pids: number[], timeoutMs = 10_000): Promise<number[]> {
  try {
    await waitFor(() => pids.every((pid) => !pidAlive(pid)), `pids ${pids.join(',')} to exit`, { timeoutMs });
  } catch {
    // Report what is left; the caller asserts on it.
  }
  return pids.filter(pidAlive);
}
