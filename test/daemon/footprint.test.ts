/**
 * What an idle daemon keeps (B10; daemon/host/heap-footprint.ts, daemon/host/idle-release.ts): after a
 * burst of runs, jobs and a pattern wait, it gives back the young generation the burst grew and
 * lets its helper processes and threads go. Measured as the anonymous memory (`Pss_Anon` of
 * `smaps_rollup`: the heap, not the shared Node binary) of the daemon's own process.
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { QUIET_MS } from '../../daemon/host/heap-footprint.js';
import { HELPER_IDLE_MS } from '../../daemon/host/idle-release.js';
import { JobRelease, JobWait, ShellRun, ShellStart } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { spawnerProcesses } from '../helpers/procs.js';
import { scrape, startObservedDaemon } from '../observability/helpers.js';

/** `Pss_Anon` of a process, in MB. */
function anonMb(pid: number): number {
  return Number(/^Pss_Anon:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1]) / 1024;
}

/** How many threads a process runs now. */
function threads(pid: number): number {
  return Number(/^Threads:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
}

describe('daemon footprint', { timeout: 120_000 }, () => {
  it('after a burst, keeps no helper and at most 6 MB more anonymous memory than idle after start', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('f');
    // What every request loads (zod, the libuv pool) is counted in the idle figure.
    await client.run({ sessionId: 'f', command: 'true' });
    await sleep(QUIET_MS * 3);
    const idle = { anon: anonMb(daemon.pid), threads: threads(daemon.pid) };

    for (let i = 0; i < 200; i++) await client.call(ShellRun, { sessionId: 'f', command: 'echo run' });
    const jobs = await Promise.all(
      Array.from({ length: 20 }, () => client.call(ShellStart, { sessionId: 'f', command: 'echo job; sleep 0.2' })),
    );
    for (const { jobId } of jobs) {
      await client.call(JobWait, { sessionId: 'f', jobId, until: { output: '^job$' } });
      await client.call(JobWait, { sessionId: 'f', jobId });
      await client.call(JobRelease, { sessionId: 'f', jobId });
    }
    const busy = anonMb(daemon.pid);
    expect(spawnerProcesses(daemon.pid)).toHaveLength(1);

    await sleep(Math.max(QUIET_MS, HELPER_IDLE_MS) + 2_000);
    const after = { anon: anonMb(daemon.pid), threads: threads(daemon.pid) };
    console.log(
      `footprint: Pss_Anon idle ${idle.anon.toFixed(1)} MB, busy ${busy.toFixed(1)} MB, after ${after.anon.toFixed(1)} MB; threads ${idle.threads} -> ${after.threads}`,
    );
    expect(spawnerProcesses(daemon.pid)).toEqual([]);
    expect(after.threads).toBe(idle.threads);
    expect(after.anon - idle.anon).toBeLessThan(6);
  });

  it('keeps the young generation at its first size through a burst after a worker thread started', async () => {
    const { daemon, base } = await startObservedDaemon();
    const client = await daemon.session('y');
    const youngGeneration = async () =>
      (await scrape(base)).samples.get('nodejs_heap_space_size_total_bytes{space="new"}')! / 2 ** 20;
    const first = await youngGeneration();
    // A pattern wait starts the pattern thread; starting a thread resets V8's flags.
    const { jobId } = await client.call(ShellStart, { sessionId: 'y', command: 'echo ready; sleep 0.2' });
    await client.call(JobWait, { sessionId: 'y', jobId, until: { output: '^ready$' } });
    await client.call(JobWait, { sessionId: 'y', jobId });
    for (let i = 0; i < 200; i++) await client.call(ShellRun, { sessionId: 'y', command: 'echo run' });
    const after = await youngGeneration();
    console.log(`young generation: ${first} MB at start, ${after} MB after the thread and 200 runs`);
    expect(after).toBeLessThanOrEqual(first);
  });
});
