/** B1: sequential `shell/run` of `true` over one connection vs in-process spawn and execa. */
import type { ExecdClient } from '../client/connection.js';
import { baselineCheck } from './checks.js';
import { execaBash, spawnBash } from './baselines.js';
import type { BenchDaemon } from './daemon.js';
import { interleave } from './interleave.js';
import { readCpuMs } from './proc-stats.js';
import { median, percentile, type Figure } from './stats.js';

const RUNS = 500;
const WARMUP = 20;

/** Measures B1; the daemon side is one connection with one open session. */
export async function benchLatency(daemon: BenchDaemon): Promise<Figure[]> {
  const client: ExecdClient = await daemon.session('bench-b1');
  const sides = [
    {
      name: 'daemon',
      once: async () => {
        const result = await client.run({ sessionId: 'bench-b1', command: 'true' });
        if (result.exitCode !== 0) throw new Error(`B1: shell/run of true exited ${result.exitCode}`);
      },
    },
    { name: 'spawn', once: async () => baselineCheck(await spawnBash('true'), '') },
    { name: 'execa', once: async () => baselineCheck(await execaBash('true'), '') },
  ];
  // The daemon idles while the baselines run, so its whole CPU time belongs to its own runs.
  const cpuBefore = readCpuMs(daemon.pid);
  const times = await interleave(sides, RUNS, WARMUP);
  const daemonCpuMs = readCpuMs(daemon.pid) - cpuBefore;
  const [d, s, e] = ['daemon', 'spawn', 'execa'].map((name) => times.get(name)!) as [number[], number[], number[]];
  const ms = (values: number[], p: number) => `${percentile(values, p).toFixed(2)} ms`;
  return [
    {
      label: 'B1 p50 ratio vs spawn',
      value: median(d) / median(s),
      target: 1.3,
      comparison: 'at-most',
      note: `execd ${ms(d, 50)}, spawn ${ms(s, 50)}`,
    },
    {
      label: 'B1 p50 ratio vs execa',
      value: median(d) / median(e),
      target: 1.1,
      comparison: 'at-most',
      note: `execa ${ms(e, 50)}`,
    },
    {
      label: 'B1 p99 ratio vs spawn',
      value: percentile(d, 99) / percentile(s, 99),
      note: `execd ${ms(d, 99)}, spawn ${ms(s, 99)}, execa ${ms(e, 99)}`,
    },
    {
      label: 'B1 daemon CPU per run',
      value: daemonCpuMs / (RUNS + WARMUP),
      unit: ' ms',
      note: `${RUNS} runs, ${WARMUP} warm-up`,
    },
  ];
}
