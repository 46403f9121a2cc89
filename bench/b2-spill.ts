/**
 * B2: one `shell/run` of `head -c 512M /dev/zero` that spills, vs bash writing the same bytes to a
 * file with a plain redirect; and how much the daemon's resident memory grows meanwhile.
 */
import { statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { spawnBash } from './baselines.js';
import type { BenchDaemon } from './daemon.js';
import { interleave } from './interleave.js';
import { readCpuMs, readMemory, resetPeakMemory, sampleRss } from './proc-stats.js';
import { median, type Figure } from './stats.js';

const BYTES = 512 * 1024 * 1024;
const COMMAND = 'head -c 512M /dev/zero';
const ROUNDS = 5;
const MIB = 1024 * 1024;

/** The daemon config B2 needs: a spill cap above the stream, so the file keeps every byte. */
export const SPILL_CONFIG = { maxSpillBytes: 2 * BYTES };

/** Throws unless `path` holds exactly the stream; then deletes it. */
function checkAndRemove(path: string | undefined, what: string): void {
  const size = path === undefined ? -1 : statSync(path).size;
  if (size !== BYTES) throw new Error(`B2: ${what} holds ${size} bytes, expected ${BYTES}`);
  unlinkSync(path!);
}

/** Measures B2 against a daemon started with SPILL_CONFIG. */
export async function benchSpill(daemon: BenchDaemon): Promise<Figure[]> {
  const client = await daemon.session('bench-b2');
  const redirectFile = join(daemon.dir, 'redirect.out');
  let growth = 0;
  let cpuMs = 0;
  const sides = [
    {
      name: 'daemon',
      once: async () => {
        const before = readMemory(daemon.pid).rss;
        const peakReset = resetPeakMemory(daemon.pid);
        const sampler = sampleRss(daemon.pid);
        const cpuBefore = readCpuMs(daemon.pid);
        const result = await client.run({ sessionId: 'bench-b2', command: COMMAND });
        cpuMs = Math.max(cpuMs, readCpuMs(daemon.pid) - cpuBefore);
        const sampled = sampler.stop();
        const peak = peakReset ? Math.max(sampled, readMemory(daemon.pid).peak) : sampled;
        growth = Math.max(growth, peak - before);
        if (result.exitCode !== 0 || !result.stdout.truncated)
          throw new Error(`B2: unexpected result ${JSON.stringify(result).slice(0, 300)}`);
        checkAndRemove(result.stdout.spillPath, 'the spill file');
      },
    },
    {
      name: 'redirect',
      once: async () => {
        const result = await spawnBash(`${COMMAND} > '${redirectFile}'`);
        if (result.exitCode !== 0) throw new Error(`B2: the redirect exited ${result.exitCode}`);
        checkAndRemove(redirectFile, 'the redirect file');
      },
    },
  ];
  const times = await interleave(sides, ROUNDS, 1);
  const daemonMs = median(times.get('daemon')!);
  const redirectMs = median(times.get('redirect')!);
  const mibPerSecond = (ms: number) => `${(BYTES / MIB / (ms / 1000)).toFixed(0)} MiB/s`;
  return [
    {
      label: 'B2 throughput ratio vs redirect',
      value: redirectMs / daemonMs,
      target: 0.9,
      comparison: 'at-least',
      note: `execd ${mibPerSecond(daemonMs)}, redirect ${mibPerSecond(redirectMs)}`,
    },
    {
      label: 'B2 daemon RSS growth',
      value: growth / MIB,
      target: 64,
      comparison: 'at-most',
      digits: 1,
      unit: ' MB',
      note: `worst of ${ROUNDS + 1} runs; daemon CPU up to ${cpuMs.toFixed(0)} ms per run`,
    },
  ];
}
