/**
 * The daemon under measurement: the BUILT `execd serve` (dist/) in a subprocess on a temporary
 * socket and state dir, stopped and removed on every exit path.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '../client/connect.js';
import { type ExecdClient } from '../client/connection.js';
import { SessionOpen } from '../protocol/methods.js';
import { onCleanup } from './cleanup.js';

/** The bundled CLI entry, the `execd` users run (this file runs from dist/bench/). */
export const CLI = join(import.meta.dirname, '..', 'bundle', 'main.js');

/** How long a daemon may take to listen, and to stop before it is killed. */
const START_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 15_000;

/** A daemon started for the bench. */
export interface BenchDaemon {
  /** The temp dir holding socket, state dir and any baseline files. */
  dir: string;
  socketPath: string;
  stateDir: string;
  pid: number;
  /** The daemon's log so far (its last 10 kB). */
  log(): string;
  /** Connects an authenticated client; closed when the daemon stops. */
  connect(): Promise<ExecdClient>;
  /** Connects and opens `sessionId` with the temp dir as cwd. */
  session(sessionId: string): Promise<ExecdClient>;
  /** Environment for a CLI process that should reach this daemon. */
  cliEnv(): NodeJS.ProcessEnv;
  /** Stops the daemon (SIGTERM, SIGKILL after a timeout) and removes the temp dir. */
  stop(): Promise<void>;
}

/** Resolves once `proc` has exited. */
export function exited(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => proc.once('exit', () => resolve()));
}

/** The daemon's environment: the bench's, without anything that would point it elsewhere. */
export function daemonEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.EXECD_SOCKET;
  delete env.EXECD_STATE_DIR;
  delete env.EXECD_TOKEN;
  return env;
}

/** Starts a daemon with `config` as `--config` flags (and `extraArgs`) and waits until it listens. */
export async function startBenchDaemon(
  config: Record<string, unknown> = {},
  extraArgs: string[] = [],
): Promise<BenchDaemon> {
  const dir = mkdtempSync(join(tmpdir(), 'execd-bench-'));
  const socketPath = join(dir, 'run', 'execd.sock');
  const stateDir = join(dir, 'state');
  // Profiling hook, e.g. BENCH_DAEMON_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof'.
  const nodeArgs = process.env.BENCH_DAEMON_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const args = [...nodeArgs, CLI, 'serve', '--socket', socketPath, '--state-dir', stateDir];
  for (const [key, value] of Object.entries(config)) args.push('--config', `${key}=${JSON.stringify(value)}`);
  args.push(...extraArgs);
  const proc = spawn(process.execPath, args, { env: daemonEnv(), stdio: ['ignore', 'ignore', 'pipe'] });
  const clients: ExecdClient[] = [];
  const forget = onCleanup(() => {
    proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  let log = '';
  const listening = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the daemon did not listen within ${START_TIMEOUT_MS}ms`)),
      START_TIMEOUT_MS,
    );
    proc.stderr.setEncoding('utf8').on('data', (text: string) => {
      log = (log + text).slice(-10_000);
      if (log.includes('"msg":"listening"')) {
        clearTimeout(timer);
        resolve();
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the daemon exited (${code}) before listening: ${log.trim().slice(-500)}`));
    });
  });

  const daemon: BenchDaemon = {
    dir,
    socketPath,
    stateDir,
    pid: proc.pid!,
    log: () => log,
    async connect() {
      const client = await connect({ socketPath, stateDir, clientName: 'execd-bench' });
      clients.push(client);
      return client;
    },
    async session(sessionId) {
      const client = await daemon.connect();
      await client.call(SessionOpen, { sessionId, cwd: dir });
      return client;
    },
    cliEnv() {
      return { ...daemonEnv(), EXECD_SOCKET: socketPath, EXECD_STATE_DIR: stateDir };
    },
    async stop() {
      for (const client of clients.splice(0)) client.close();
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), STOP_TIMEOUT_MS);
      await exited(proc);
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
      forget();
    },
  };
  try {
    await listening;
  } catch (error) {
    await daemon.stop();
    throw error;
  }
  return daemon;
}

/** A bench daemon with a TLS listener on loopback (`pki`'s certificate pair), and that listener's URL. */
export async function startTlsBenchDaemon(
  config: Record<string, unknown>,
  pki: { cert: string; key: string },
): Promise<{ daemon: BenchDaemon; url: string }> {
  const daemon = await startBenchDaemon(config, [
    '--listen',
    'tls://127.0.0.1:0',
    '--tls-cert',
    pki.cert,
    '--tls-key',
    pki.key,
  ]);
  const url = /"listen":\["(tls:\/\/[^"]+)"/.exec(daemon.log())?.[1];
  if (url === undefined) {
    await daemon.stop();
    throw new Error('bench: the daemon did not log its TLS listener');
  }
  return { daemon, url };
}
