/**
 * B1SANDBOX: the run overhead of each sandbox runner. `shell/run` of `true` unconfined, under bubblewrap
 * and under Landlock (`workspace-write`), interleaved on daemons started with each
 * `sandboxBackend`: what confinement costs per command. Targets (SPEC §16): Landlock's overhead
 * ≤ 15 ms and ≤ 1.5× bubblewrap's.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ExecdClient } from '../client/connection.js';
import { SessionOpen } from '../protocol/methods.js';
import { startBenchDaemon, type BenchDaemon } from './daemon.js';
import { interleave } from './interleave.js';
import { median, percentile, type Figure } from './stats.js';

const RUNS = 100;
const WARMUP = 5;

async function confinedSession(backend: 'bwrap' | 'landlock'): Promise<{ daemon: BenchDaemon; client: ExecdClient }> {
  const daemon = await startBenchDaemon({ sandboxBackend: backend });
  const client = await daemon.connect();
  if (client.info.capabilities.sandbox.backend !== backend)
    throw new Error(`B1SANDBOX: ${backend} does not work here (${client.info.capabilities.sandbox.unavailable})`);
  // A workspace beside the daemon's state dir, not holding it: Landlock refuses one that does.
  const workspace = join(daemon.dir, 'ws');
  mkdirSync(workspace, { recursive: true });
  await client.call(SessionOpen, { sessionId: 'bench-b11', cwd: workspace, sandbox: { mode: 'workspace-write' } });
  return { daemon, client };
}

async function runTrue(client: ExecdClient, sessionId: string): Promise<void> {
  const result = await client.run({ sessionId, command: 'true' });
  if (result.exitCode !== 0)
    throw new Error(`B1SANDBOX: true exited ${result.exitCode} (${result.stderr.text.trim()})`);
}

/** Measures B1SANDBOX on the shared (unconfined) daemon and one daemon per runner. */
export async function benchSandbox(daemon: BenchDaemon): Promise<Figure[]> {
  const free = await daemon.session('bench-b11');
  const bwrap = await confinedSession('bwrap');
  const landlock = await confinedSession('landlock');
  try {
    const times = await interleave(
      [
        { name: 'unconfined', once: () => runTrue(free, 'bench-b11') },
        { name: 'bwrap', once: () => runTrue(bwrap.client, 'bench-b11') },
        { name: 'landlock', once: () => runTrue(landlock.client, 'bench-b11') },
      ],
      RUNS,
      WARMUP,
    );
    const [u, b, l] = ['unconfined', 'bwrap', 'landlock'].map((name) => times.get(name)!) as [
      number[],
      number[],
      number[],
    ];
    const ms = (values: number[], p: number) => `${percentile(values, p).toFixed(1)} ms`;
    return [
      {
        label: 'B1 sandbox bwrap run overhead p50',
        value: median(b) - median(u),
        unit: ' ms',
        note: `bwrap ${ms(b, 50)} (p99 ${ms(b, 99)}), unconfined ${ms(u, 50)}`,
      },
      {
        label: 'B1 sandbox landlock run overhead p50',
        value: median(l) - median(u),
        target: 15,
        comparison: 'at-most',
        unit: ' ms',
        note: `landlock ${ms(l, 50)} (p99 ${ms(l, 99)}), ${RUNS} runs each, interleaved`,
      },
      {
        label: 'B1 sandbox landlock overhead vs bwrap overhead',
        // Both near zero would make any ratio noise: at most 1 ms counts as 1 ms.
        value: Math.max(median(l) - median(u), 1) / Math.max(median(b) - median(u), 1),
        target: 1.5,
        comparison: 'at-most',
      },
    ];
  } finally {
    await bwrap.daemon.stop();
    await landlock.daemon.stop();
  }
}
