/** B3: 16 clients × 100 runs of `echo <unique>` at once, vs in-process spawn at concurrency 16. */
import type { ExecdClient } from '../client/connection.js';
import { spawnBash } from './baselines.js';
import type { BenchDaemon } from './daemon.js';
import { interleave } from './interleave.js';
import { readCpuMs } from './proc-stats.js';
import { median, type Figure } from './stats.js';

/** Clients at once, each its own connection and session. */
export const CLIENTS = 16;
/** Sequential runs per client. */
export const RUNS_PER_CLIENT = 100;
const ROUNDS = 2;

/** A word no other run of this bench prints. */
export function unique(side: string, round: number, worker: number, run: number): string {
  return `${side}-${round}-${worker}-${run}-${Math.random().toString(36).slice(2)}`;
}

/** Runs `work` on `CLIENTS` workers, `RUNS_PER_CLIENT` times each, all at once. */
export async function onWorkers(work: (worker: number, run: number) => Promise<void>): Promise<void> {
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, worker) => {
      for (let run = 0; run < RUNS_PER_CLIENT; run++) await work(worker, run);
    }),
  );
}

/** Measures B3: each client is its own connection with its own session. */
export async function benchConcurrency(daemon: BenchDaemon): Promise<Figure[]> {
  const clients: ExecdClient[] = await Promise.all(
    Array.from({ length: CLIENTS }, (_, i) => daemon.session(`bench-b3-${i}`)),
  );
  let wrong = 0;
  const sides = [
    {
      name: 'daemon',
      once: (round: number) =>
        onWorkers(async (worker, run) => {
          const word = unique('d', round, worker, run);
          const result = await clients[worker]!.run({ sessionId: `bench-b3-${worker}`, command: `echo ${word}` });
          if (result.exitCode !== 0 || result.stdout.text !== `${word}\n` || result.stderr.text !== '') wrong++;
        }),
    },
    {
      name: 'spawn',
      once: (round: number) =>
        onWorkers(async (worker, run) => {
          const word = unique('s', round, worker, run);
          const result = await spawnBash(`echo ${word}`);
          if (result.exitCode !== 0 || result.stdout !== `${word}\n`)
            throw new Error(`B3: baseline printed ${JSON.stringify(result.stdout)}`);
        }),
    },
  ];
  const cpuBefore = readCpuMs(daemon.pid);
  // No warm-up round: the daemon and the clients are warm from the figures before.
  const times = await interleave(sides, ROUNDS);
  const cpuMs = readCpuMs(daemon.pid) - cpuBefore;
  const runs = CLIENTS * RUNS_PER_CLIENT;
  const daemonRate = runs / (median(times.get('daemon')!) / 1000);
  const spawnRate = runs / (median(times.get('spawn')!) / 1000);
  return [
    {
      label: 'B3 lost or crossed outputs',
      value: wrong,
      target: 0,
      comparison: 'at-most',
      digits: 0,
      note: `${runs * ROUNDS} runs checked`,
    },
    {
      label: 'B3 runs/s ratio vs spawn',
      value: daemonRate / spawnRate,
      target: 0.8,
      comparison: 'at-least',
      note: `execd ${daemonRate.toFixed(0)} runs/s, spawn ${spawnRate.toFixed(0)} runs/s; daemon CPU ${(cpuMs / (runs * ROUNDS)).toFixed(2)} ms per run`,
    },
  ];
}
