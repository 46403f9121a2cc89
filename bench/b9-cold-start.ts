/**
 * B9: cold start. From no daemon to the answer of `execd run -- true` (the CLI auto-starts one),
 * and from `execd serve` to a socket that answers `initialize`; each from an empty state dir,
 * against B5's baseline (`node -e` spawning `bash -c true`) measured interleaved in the same run.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from '../client/connect.js';
import { onCleanup } from './cleanup.js';
import { CLI, daemonEnv, exited } from './daemon.js';
import { interleave } from './interleave.js';
import { NODE_BASELINE, runProcess } from './b5-cli.js';
import { median, msSince, type Figure } from './stats.js';

const ROUNDS = 10;
/** How often serve-to-ready polls the socket. */
const POLL_MS = 2;

/** A fresh socket and state dir, removed (with any daemon in it stopped) by `done`. */
function freshEndpoint(): { env: NodeJS.ProcessEnv; socketPath: string; stateDir: string; done: () => Promise<void> } {
  const dir = mkdtempSync(join(tmpdir(), 'execd-b9-'));
  const socketPath = join(dir, 'run', 'execd.sock');
  const stateDir = join(dir, 'state');
  const env = { ...daemonEnv(), EXECD_SOCKET: socketPath, EXECD_STATE_DIR: stateDir };
  const forget = onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  return {
    env,
    socketPath,
    stateDir,
    async done() {
      await runProcess(process.execPath, [CLI, 'stop'], env).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
      forget();
    },
  };
}

/** No daemon, then `execd run -- true`: the CLI starts one and runs the command. */
async function autoStartOnce(): Promise<number> {
  const endpoint = freshEndpoint();
  try {
    const start = performance.now();
    await runProcess(process.execPath, [CLI, 'run', '--', 'true'], endpoint.env);
    return msSince(start);
  } finally {
    await endpoint.done();
  }
}

/** `execd serve` until a client is authenticated (`initialize` answered) on its socket. */
async function serveToReadyOnce(): Promise<number> {
  const endpoint = freshEndpoint();
  const start = performance.now();
  const proc = spawn(
    process.execPath,
    [CLI, 'serve', '--socket', endpoint.socketPath, '--state-dir', endpoint.stateDir],
    {
      env: endpoint.env,
      stdio: 'ignore',
    },
  );
  const kill = onCleanup(() => proc.kill('SIGKILL'));
  try {
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`B9: execd serve exited ${proc.exitCode} before it was ready`);
      try {
        const client = await connect({
          socketPath: endpoint.socketPath,
          stateDir: endpoint.stateDir,
          clientName: 'execd-bench',
        });
        const ms = msSince(start);
        client.close();
        return ms;
      } catch {
        await sleep(POLL_MS);
      }
    }
  } finally {
    proc.kill('SIGTERM');
    await exited(proc);
    kill();
    await endpoint.done();
  }
}

/** Measures B9; needs no running daemon (each round makes its own). */
export async function benchColdStart(): Promise<Figure[]> {
  const env = daemonEnv();
  const times = await interleave(
    [
      { name: 'auto', once: autoStartOnce },
      { name: 'serve', once: serveToReadyOnce },
      { name: 'node', once: () => runProcess(process.execPath, ['-e', NODE_BASELINE], env) },
    ],
    ROUNDS,
    1,
  );
  const auto = median(times.get('auto')!);
  const serve = median(times.get('serve')!);
  const node = median(times.get('node')!);
  const of = `node -e ${node.toFixed(1)} ms (medians of ${ROUNDS}, each from an empty state dir)`;
  return [
    {
      label: 'B9 auto-start cold start vs node -e',
      value: auto / node,
      target: 2.5,
      comparison: 'at-most',
      note: `execd run -- true with no daemon ${auto.toFixed(1)} ms, ${of}`,
    },
    {
      label: 'B9 serve-to-ready vs node -e',
      value: serve / node,
      target: 1.5,
      comparison: 'at-most',
      note: `execd serve until initialize answers ${serve.toFixed(1)} ms, ${of}`,
    },
  ];
}
