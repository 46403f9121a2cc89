/**
 * B3LANDLOCK: B3's 16 clients × 100 runs of `echo <unique>` at once, in `workspace-write` sessions
 * of a daemon whose runner is Landlock (every run forked by the session's warm confined spawner),
 * against the same load on the shared unconfined daemon, interleaved. Target: ≥ 0.8× its runs/s.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { SessionOpen } from '../protocol/methods.js';
import type { ExecdClient } from '../client/connection.js';
import { CLIENTS, onWorkers, RUNS_PER_CLIENT, unique } from './b3-concurrency.js';
import { startBenchDaemon, type BenchDaemon } from './daemon.js';
import { interleave } from './interleave.js';
import { median, type Figure } from './stats.js';

const ROUNDS = 2;

/** One connection and session per client, on `daemon`; `workspace-write` when `confined`. */
async function clientsOf(daemon: BenchDaemon, prefix: string, confined: boolean): Promise<ExecdClient[]> {
  // A workspace beside the daemon's state dir, not holding it: Landlock refuses one that does.
  const workspace = join(daemon.dir, 'ws');
  mkdirSync(workspace, { recursive: true });
  return Promise.all(
    Array.from({ length: CLIENTS }, async (_, i) => {
      const client = await daemon.connect();
      await client.call(SessionOpen, {
        sessionId: `${prefix}-${i}`,
        cwd: workspace,
        ...(confined && { sandbox: { mode: 'workspace-write' as const } }),
      });
      return client;
    }),
  );
}

/** Measures B3LANDLOCK on its own Landlock daemon and the shared one. */
export async function benchConcurrencyLandlock(shared: BenchDaemon): Promise<Figure[]> {
  const landlock = await startBenchDaemon({ sandboxBackend: 'landlock' });
  try {
    const probe = await landlock.connect();
    if (probe.info.capabilities.sandbox.backend !== 'landlock')
      throw new Error(`B3LANDLOCK: Landlock does not work here (${probe.info.capabilities.sandbox.unavailable})`);
    const confined = await clientsOf(landlock, 'bench-b3l', true);
    const free = await clientsOf(shared, 'bench-b3u', false);
    let wrong = 0;
    const side = (name: string, clients: ExecdClient[], prefix: string) => ({
      name,
      once: (round: number) =>
        onWorkers(async (worker, run) => {
          const word = unique(name, round, worker, run);
          const result = await clients[worker]!.run({ sessionId: `${prefix}-${worker}`, command: `echo ${word}` });
          if (result.exitCode !== 0 || result.stdout.text !== `${word}\n`) wrong++;
        }),
    });
    // One warm-up round each: the confined spawners start with their session's first run.
    const times = await interleave(
      [side('landlock', confined, 'bench-b3l'), side('unconfined', free, 'bench-b3u')],
      ROUNDS,
      1,
    );
    const runs = CLIENTS * RUNS_PER_CLIENT;
    const rate = (name: string) => runs / (median(times.get(name)!) / 1000);
    return [
      {
        label: 'B3 landlock workspace-write runs/s ratio vs unconfined',
        value: rate('landlock') / rate('unconfined'),
        target: 0.8,
        comparison: 'at-least',
        note: `landlock ${rate('landlock').toFixed(0)} runs/s, unconfined ${rate('unconfined').toFixed(0)} runs/s; ${wrong} wrong of ${runs * (ROUNDS + 1) * 2}`,
      },
    ];
  } finally {
    await landlock.stop();
  }
}
