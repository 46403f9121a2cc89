/**
 * `job/read { waitMs }` (SPEC §10): with nothing new, the read waits until output arrives, the job
 * settles, or `waitMs` passes; waiting readers block neither each other nor anyone else.
 */
import { performance } from 'node:perf_hooks';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ExecdRpcError } from '../../client/connection.js';
import { JobRead, ShellRun, ShellStart } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';

/** CPU time (user + system, ms) a process has used, from /proc. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

describe('job/read with waitMs', { timeout: 120_000 }, () => {
  it('returns about when output arrives, and after waitMs with nothing for a silent job', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const silent = await client.call(ShellStart, { sessionId: 's1', command: 'sleep 100' });
    const late = await client.call(ShellStart, { sessionId: 's1', command: 'sleep 1; echo late; sleep 100' });

    const t0 = performance.now();
    const [lateRead, silentRead] = await Promise.all([
      client.call(JobRead, { sessionId: 's1', jobId: late.jobId, waitMs: 5000 }).then((read) => ({
        read,
        ms: performance.now() - t0,
      })),
      client.call(JobRead, { sessionId: 's1', jobId: silent.jobId, waitMs: 5000 }).then((read) => ({
        read,
        ms: performance.now() - t0,
      })),
    ]);
    console.log(
      `job/read waitMs 5000: output after 1 s returned at ${lateRead.ms.toFixed(0)} ms; silent job at ${silentRead.ms.toFixed(0)} ms`,
    );
    expect(lateRead.read).toMatchObject({ delta: 'late\n', lossy: false, job: { status: 'running' } });
    expect(lateRead.ms).toBeLessThan(4500);
    expect(silentRead.read).toMatchObject({ delta: '', job: { status: 'running' } });
    expect(silentRead.ms).toBeGreaterThan(4900);
  });

  it('returns at once when output is waiting, and when the job settles without output', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'echo ready >&2; sleep 100' });
    const first = await client.call(JobRead, { sessionId: 's1', jobId, waitMs: 30_000 });
    expect(first.delta).toBe('[stderr]\nready\n');
    expect(first.stderr).toMatchObject({ text: 'ready\n', from: 0, offset: 0, nextOffset: 6 });
    const quiet = await client.call(ShellStart, { sessionId: 's1', command: 'sleep 0.5; exit 4' });
    const t0 = performance.now();
    const settled = await client.call(JobRead, { sessionId: 's1', jobId: quiet.jobId, waitMs: 30_000 });
    const ms = performance.now() - t0;
    console.log(`job/read waitMs 30000 on a job that exits after 0.5 s: returned at ${ms.toFixed(0)} ms`);
    expect(settled).toMatchObject({ delta: '', job: { status: 'completed', exitCode: 4 } });
    expect(ms).toBeLessThan(25_000);
  });

  it('keeps waiting while only the start of a character has been written', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const { jobId } = await client.call(ShellStart, {
      sessionId: 's1',
      command: `printf '\\342\\202'; sleep 1; printf '\\254\\n'; sleep 100`,
    });
    const t0 = performance.now();
    const read = await client.call(JobRead, { sessionId: 's1', jobId, waitMs: 10_000 });
    const ms = performance.now() - t0;
    console.log(`job/read waitMs 10000 with half a character written: returned at ${ms.toFixed(0)} ms`);
    expect(read.delta).toBe('€\n');
  });

  it('consumes nothing for a waiting caller that cancelled or went away', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'sleep 2; echo late; sleep 100' });
    // Cancelled at once: the daemon answers an empty read without waiting and without consuming.
    const controller = new AbortController();
    const cancelled = client.call(JobRead, { sessionId: 's1', jobId, waitMs: 20_000 }, { signal: controller.signal });
    controller.abort();
    expect(await cancelled).toMatchObject({ delta: '', stdout: { from: 0, nextOffset: 0 } });
    // Cancelled while it waits: it stops waiting at once, and consumes nothing either.
    const later = new AbortController();
    const t0 = performance.now();
    const waiting = client.call(JobRead, { sessionId: 's1', jobId, waitMs: 20_000 }, { signal: later.signal });
    setTimeout(() => later.abort(), 100);
    expect(await waiting).toMatchObject({ delta: '', stdout: { from: 0, nextOffset: 0 } });
    console.log(`a waiting job/read cancelled after 100 ms answered at ${(performance.now() - t0).toFixed(0)} ms`);
    // A caller whose connection drops while it waits: its read never consumes the line.
    const leaving = await daemon.session('s1');
    void leaving.call(JobRead, { sessionId: 's1', jobId, waitMs: 20_000 }).catch(() => {});
    await new Promise((resolve) => setTimeout(resolve, 100));
    leaving.close();
    const read = await client.call(JobRead, { sessionId: 's1', jobId, waitMs: 20_000 });
    expect(read.delta).toBe('late\n');
  });

  it('refuses a waitMs outside 0..30000, naming the field', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    for (const waitMs of [30_001, -1, 'soon']) {
      const error = await client.call(JobRead, { sessionId: 's1', jobId: 'bash-1', waitMs: waitMs as number }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ExecdRpcError);
      expect((error as ExecdRpcError).message).toBe('waitMs must be a number from 0 to 30000');
    }
  });

  it('50 readers waiting on 50 jobs block neither each other nor a probe client', async () => {
    const daemon = await startDaemon({ config: { maxJobsPerSession: 64 } });
    const sessions = ['w1', 'w2', 'w3', 'w4', 'w5'];
    const readers = await Promise.all(sessions.map((id) => daemon.session(id)));
    const probe = await daemon.session('probe');
    const probeRuns = async (count: number) => {
      const times: number[] = [];
      for (let i = 0; i < count; i++) {
        const t0 = performance.now();
        await probe.call(ShellRun, { sessionId: 'probe', command: 'true' });
        times.push(performance.now() - t0);
      }
      return median(times);
    };
    await probeRuns(5);
    const idle = await probeRuns(20);

    const jobs: { client: (typeof readers)[number]; sessionId: string; jobId: string }[] = [];
    for (const [i, sessionId] of sessions.entries()) {
      for (let n = 0; n < 10; n++) {
        // Silent for 8 s, then one line: the reads below wait all that time.
        const { jobId } = await readers[i]!.call(ShellStart, {
          sessionId,
          command: `sleep 8; echo done-${sessionId}-${n}; sleep 100`,
        });
        jobs.push({ client: readers[i]!, sessionId, jobId });
      }
    }
    const cpuBefore = cpuMs(daemon.pid);
    const t0 = performance.now();
    let returned = 0;
    const waits = jobs.map(({ client, sessionId, jobId }) =>
      client.call(JobRead, { sessionId, jobId, waitMs: 30_000 }).then((read) => {
        returned += 1;
        return { read, ms: performance.now() - t0 };
      }),
    );
    const busy = await probeRuns(20);
    const returnedDuringProbe = returned;
    const probeCpu = cpuMs(daemon.pid) - cpuBefore;
    const results = await Promise.all(waits);
    const cpuWaiting = cpuMs(daemon.pid) - cpuBefore - probeCpu;
    const waitedMs = performance.now() - t0;
    const times = results.map((result) => result.ms);
    console.log(
      `probe shell/run p50: ${idle.toFixed(1)} ms idle, ${busy.toFixed(1)} ms with 50 waiting reads ` +
        `(${returnedDuringProbe} of them had returned by then); waits returned after ` +
        `${Math.min(...times).toFixed(0)}–${Math.max(...times).toFixed(0)} ms; daemon CPU ${cpuWaiting.toFixed(0)} ms ` +
        `over the ${(waitedMs / 1000).toFixed(1)} s after the probe`,
    );
    // Every reader got its own job's line, once: nobody waited for anybody else.
    for (const [i, { read }] of results.entries()) {
      const { sessionId } = jobs[i]!;
      expect(read.delta).toBe(`done-${sessionId}-${i % 10}\n`);
    }
  });
});
