/**
 * B1LIMITS: what a resource limit costs per command. `shell/run` of `true` in a session without
 * limits and in one whose commands get a 512 MiB memory limit (their cgroups made and written, and
 * the child born in them, on every run), interleaved on the same daemon. Figures, no targets.
 */
import type { ExecdClient } from '../client/connection.js';
import { SessionOpen } from '../protocol/methods.js';
import type { BenchDaemon } from './daemon.js';
import { interleave } from './interleave.js';
import { median, percentile, type Figure } from './stats.js';

const RUNS = 200;
const WARMUP = 10;

async function runTrue(client: ExecdClient, sessionId: string): Promise<void> {
  const result = await client.run({ sessionId, command: 'true' });
  if (result.exitCode !== 0) throw new Error(`B1LIMITS: true exited ${result.exitCode}`);
}

/** Measures B1LIMITS on the shared daemon: one session without limits, one with a memory limit. */
export async function benchLimits(daemon: BenchDaemon): Promise<Figure[]> {
  const free = await daemon.session('bench-limits-off');
  const limited = await daemon.connect();
  const enforced = limited.info.capabilities.limits;
  if (!enforced.enforces.includes('memoryBytes'))
    throw new Error(`B1LIMITS: no memory limit can be enforced here (${enforced.unavailable})`);
  await limited.call(SessionOpen, {
    sessionId: 'bench-limits-on',
    cwd: daemon.dir,
    limits: { memoryBytes: 512 << 20 },
  });
  const times = await interleave(
    [
      { name: 'off', once: () => runTrue(free, 'bench-limits-off') },
      { name: 'on', once: () => runTrue(limited, 'bench-limits-on') },
    ],
    RUNS,
    WARMUP,
  );
  const off = times.get('off')!;
  const on = times.get('on')!;
  const ms = (values: number[], p: number) => `${percentile(values, p).toFixed(2)} ms`;
  return [
    {
      label: 'B1 memory limit run overhead p50',
      value: median(on) - median(off),
      unit: ' ms',
      digits: 2,
      note: `on ${ms(on, 50)} (p99 ${ms(on, 99)}), off ${ms(off, 50)} (p99 ${ms(off, 99)}); ${enforced.backend}, ${RUNS} runs each, interleaved`,
    },
  ];
}
