/**
 * Job stdin under a hostile client (issue 27, points 5 and 22): the unread stdin of all jobs of all
 * sessions is bounded together by `maxTotalStdinBytes`, the FIFO is made off the event loop, and
 * after a restart `job/write` says what happened to a `keepStdinOpen` job's stdin.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, onTestFinished, test } from 'vitest';
import { JobStdin } from '../../daemon/jobs/job-stdin.js';
import { StdinPool } from '../../daemon/jobs/stdin-pool.js';
import { DEFAULT_CONFIG } from '../../protocol/config.js';
import { JobWrite, SessionClose, SessionOpen, ShellStart } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';

const MiB = 1024 * 1024;

/** Resident set of a process, in bytes. */
function rssOf(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB/m);
  return Number(line?.[1] ?? 0) * 1024;
}

describe('job stdin limits', () => {
  test('40 jobs × 6 MiB of unread stdin over two sessions stay within maxTotalStdinBytes', async () => {
    const daemon = await startDaemon();
    const client = await daemon.connect();
    for (const sessionId of ['a', 'b']) await client.call(SessionOpen, { sessionId, cwd: daemon.dir });
    const jobs: Array<{ sessionId: string; jobId: string }> = [];
    for (let i = 0; i < 40; i++) {
      const sessionId = i % 2 === 0 ? 'a' : 'b';
      const { jobId } = await client.call(ShellStart, { sessionId, command: 'sleep 600', keepStdinOpen: true });
      jobs.push({ sessionId, jobId });
    }
    const rssBefore = rssOf(daemon.pid);
    const chunk = 'x'.repeat(6 * MiB);
    let accepted = 0;
    let refused = 0;
    let message = '';
    for (const { sessionId, jobId } of jobs) {
      try {
        accepted += (await client.call(JobWrite, { sessionId, jobId, data: chunk })).written;
      } catch (error) {
        refused += 1;
        message = (error as Error).message;
        expect(error).toMatchObject({ errorName: 'LIMIT_EXCEEDED' });
      }
    }
    const rssGrowth = rssOf(daemon.pid) - rssBefore;
    const total = DEFAULT_CONFIG.maxTotalStdinBytes;
    console.log(
      `40 jobs × 6 MiB unread stdin: ${(accepted / MiB).toFixed(1)} MiB accepted (maxTotalStdinBytes ${total / MiB} MiB), ${refused} writes refused, daemon RSS +${(rssGrowth / MiB).toFixed(1)} MiB`,
    );
    expect(message).toContain('maxTotalStdinBytes');
    // Each FIFO takes up to a pipe buffer (64 KiB) beyond what the daemon queues.
    expect(accepted).toBeLessThanOrEqual(total + jobs.length * 64 * 1024);
    expect(rssGrowth).toBeLessThan(40 * 6 * MiB);

    // Closing a session releases what its jobs held: the other session may queue again.
    await client.call(SessionClose, { sessionId: 'a' });
    const last = jobs.filter((job) => job.sessionId === 'b').at(-1)!;
    expect(await client.call(JobWrite, { ...last, data: 'y'.repeat(MiB) })).toEqual({ written: MiB });
  });

  test('the stdin FIFO is made off the event loop: timers fire while mkfifo runs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'execd-fifo-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const pool = new StdinPool();
    let ticks = 0;
    const ticker = setInterval(() => (ticks += 1), 0);
    onTestFinished(() => clearInterval(ticker));
    const started = performance.now();
    const stdins = await Promise.all(
      Array.from({ length: 20 }, (_, i) => JobStdin.create(join(dir, `${i}.stdin`), pool)),
    );
    const elapsed = performance.now() - started;
    clearInterval(ticker);
    console.log(`20 stdin FIFOs made in ${elapsed.toFixed(1)} ms; the event loop turned ${ticks} times meanwhile`);
    // A synchronous mkfifo, or a fork on the main thread, leaves the loop (nearly) still.
    expect(ticks).toBeGreaterThanOrEqual(10);
    expect(pool.size).toBe(20);
    for (const stdin of stdins) {
      stdin.spawned();
      stdin.close();
    }
  });

  test('after a restart, job/write of a keepStdinOpen job says its stdin went with the daemon', async () => {
    const first = await startDaemon();
    const client = await first.session('s1');
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'sleep 600', keepStdinOpen: true });
    const { jobId: plainId } = await client.call(ShellStart, { sessionId: 's1', command: 'sleep 600' });
    await first.crash();
    const second = await startDaemon({ stateDir: first.stateDir, socketPath: first.socketPath });
    const after = await second.session('s1');
    const refused = await after.call(JobWrite, { sessionId: 's1', jobId, data: 'x' }).catch((error: Error) => error);
    console.log(`job/write after a restart: ${(refused as Error).message}`);
    expect(refused).toMatchObject({
      errorName: 'STDIN_CLOSED',
      message: `job ${jobId} was started with keepStdinOpen, but its stdin was closed when the daemon restarted`,
    });
    await expect(after.call(JobWrite, { sessionId: 's1', jobId: plainId, data: 'x' })).rejects.toMatchObject({
      message: `job ${plainId} was not started with keepStdinOpen`,
    });
  });
});
