/**
 * Starting a daemon in the background (`execd serve --detach`, and the clients' auto-start): the
 * daemon runs in its own session with no terminal, logs to `<stateDir>/execd.log`, and reports
 * over an IPC channel once it listens (or why it could not); the starter returns then.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { statePaths } from '../shared/state-dir.js';
import { AutostartError } from './autostart-error.js';
import type { Endpoint } from './endpoint.js';

/**
 * The CLI entry the detached daemon runs as `serve`: the bundle's (dist/bundle/main.js), which
 * starts in half the time, also when the library's modules (dist/client/) start it (from a chunk
 * of dist/bundle/ the same path); dist/client/cli/main.js where no bundle was built.
 */
const CLI_ENTRY = [new URL('../bundle/main.js', import.meta.url), new URL('./cli/main.js', import.meta.url)]
  .map((url) => fileURLToPath(url))
  .find((path) => existsSync(path))!;

/** How long a starting daemon may take to listen. */
export const DAEMON_START_TIMEOUT_MS = 30_000;

/** What a detached daemon tells its starter over the IPC channel. */
export type StartReport = { ready: true; pid: number } | { ready: false; error: string };

/** A daemon that reported it could not start. */
export class DaemonStartError extends AutostartError {}

/** Sends a start report to the process that detached this daemon, if any; resolves once sent. */
export function reportStart(report: StartReport): Promise<void> {
  const send = process.send?.bind(process);
  if (!send) return Promise.resolve();
  return new Promise((resolve) => {
    send(report, undefined, {}, () => {
      process.disconnect();
      resolve();
    });
  });
}

/** The environment a detached daemon gets: the starter's, without its client-side token. */
function daemonEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.EXECD_TOKEN;
  return env;
}

/**
 * Starts `execd serve` detached with `serveArgs`, and resolves with its pid once it listens;
 * rejects with a one-line reason (a `DaemonStartError` when the daemon explained its refusal).
 */
export function startDetached(endpoint: Endpoint, serveArgs: string[] = []): Promise<{ pid: number; logPath: string }> {
  const logPath = statePaths(endpoint.stateDir).log;
  const args = [
    CLI_ENTRY,
    'serve',
    '--socket',
    endpoint.socketPath,
    '--state-dir',
    endpoint.stateDir,
    '--log-file',
    logPath,
    ...serveArgs,
  ];
  const child = spawn(process.execPath, args, {
    detached: true,
    // No terminal: a daemon must not hold the starter's pipes or die with its terminal.
    stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    cwd: '/',
    env: daemonEnv(),
  });
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (child.connected) child.disconnect();
      child.unref();
      outcome();
    };
    const timer = setTimeout(() => {
      finish(() =>
        reject(
          new AutostartError(`execd: the daemon did not listen within ${DAEMON_START_TIMEOUT_MS}ms; see ${logPath}`),
        ),
      );
      child.kill('SIGTERM');
    }, DAEMON_START_TIMEOUT_MS);
    child.once('message', (report: StartReport) => {
      if (report.ready) finish(() => resolve({ pid: report.pid, logPath }));
      // A refusing daemon exits right after its report: answer once it is gone, so the caller
      // never sees a second daemon process, even a dying one.
      else {
        const refuse = () => finish(() => reject(new DaemonStartError(`execd serve: ${report.error}`)));
        if (child.exitCode !== null || child.signalCode !== null) refuse();
        else child.once('exit', refuse);
      }
    });
    child.once('error', (error) =>
      finish(() => reject(new AutostartError(`execd: cannot start the daemon: ${error.message}`))),
    );
    // 'close' comes after every message, so a report is never mistaken for a silent death.
    child.once('close', (code, signal) =>
      finish(() =>
        reject(
          new AutostartError(`execd: the daemon exited (${signal ?? `code ${code}`}) before listening; see ${logPath}`),
        ),
      ),
    );
  });
}
