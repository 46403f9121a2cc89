/**
 * PROBE: what a readiness probe costs (SPEC §18). A kubelet's `httpGet` on `/readyz` (a fresh TCP
 * connection per probe, as the kubelet makes) against the `exec` probe it replaces, `execd status`
 * (a Node process start per probe). Measured on a daemon of its own started with `--metrics`;
 * runnable alone: `npm run bench -- PROBE`.
 */
import { get } from 'node:http';
import { runProcess } from './b5-cli.js';
import { CLI, startBenchDaemon } from './daemon.js';
import { interleave } from './interleave.js';
import { readCpuMs } from './proc-stats.js';
import { median, type Figure } from './stats.js';

const ROUNDS = 30;

/** One `GET url` on a connection of its own; rejects unless it answers 200. */
function probe(url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = get(url, { agent: false }, (response) => {
      response.resume();
      response.once('end', () =>
        response.statusCode === 200 ? resolve() : reject(new Error(`PROBE: ${url} answered ${response.statusCode}`)),
      );
    });
    request.once('error', reject);
  });
}

/** Measures PROBE on its own daemon (the shared one has no observability listener). */
export async function benchReadiness(): Promise<Figure[]> {
  const daemon = await startBenchDaemon({}, ['--metrics', 'http://127.0.0.1:0']);
  try {
    const url = /"metrics":"(http:\/\/[^"]+)"/.exec(daemon.log())?.[1];
    if (!url) throw new Error('PROBE: the daemon did not log its --metrics address');
    const env = daemon.cliEnv();
    const sides = [
      { name: 'readyz', once: () => probe(`${url}/readyz`) },
      { name: 'status', once: () => runProcess(process.execPath, [CLI, 'status'], env) },
    ];
    const times = await interleave(sides, ROUNDS, 3);
    const readyz = median(times.get('readyz')!);
    const status = median(times.get('status')!);
    // The daemon's own CPU per /readyz, over a burst of probes alone.
    const cpuBefore = readCpuMs(daemon.pid);
    for (let n = 0; n < 200; n++) await probe(`${url}/readyz`);
    const daemonCpu = (readCpuMs(daemon.pid) - cpuBefore) / 200;
    return [
      {
        label: 'PROBE /readyz p50',
        value: readyz,
        unit: ' ms',
        note: `execd status p50 ${status.toFixed(1)} ms; medians of ${ROUNDS}, interleaved`,
      },
      {
        label: 'PROBE execd status / readyz p50 ratio',
        value: status / readyz,
        target: 10,
        comparison: 'at-least',
        note: `daemon CPU per /readyz ${daemonCpu.toFixed(3)} ms (200 probes)`,
      },
    ];
  } finally {
    await daemon.stop();
  }
}
