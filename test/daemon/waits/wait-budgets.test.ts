/**
 * `job/wait` under budgets: one session's open-ended waits stop at `maxWaitsPerSession` (the next
 * is refused at once) while another session's waits are answered with a p99 under 500 ms; a wait
 * whose caller goes away gives its slot back.
 */
import { describe, expect, it } from 'vitest';
import { JobWait, ShellStart } from '../../../protocol/methods.js';
import { startDaemon } from '../../helpers/daemon.js';
import { rejection } from '../../helpers/rejection.js';

/** The p-th percentile of `samples` (ms). */
function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

describe('job/wait budgets', { timeout: 60_000 }, () => {
  it('one session’s 70 open-ended waits: 64 wait, the rest are refused; another session’s waits p99 < 500 ms', async () => {
    const daemon = await startDaemon();
    const hog = await daemon.session('hog');
    const { jobId } = await hog.call(ShellStart, { sessionId: 'hog', command: 'sleep 300' });
    const waits = Array.from({ length: 70 }, () =>
      hog.call(JobWait, { sessionId: 'hog', jobId, until: { output: 'never printed' } }).then(
        () => 'ended',
        (error: Error) => error.message,
      ),
    );
    const refusedEarly = await Promise.race([
      Promise.all(waits.slice(64)),
      new Promise<string[]>((resolve) => setTimeout(() => resolve(['still waiting']), 5_000)),
    ]);
    expect(refusedEarly).toEqual(
      Array.from({ length: 6 }, () => 'maxWaitsPerSession limit reached (64) for session hog'),
    );

    const other = await daemon.session('b');
    const { jobId: otherJob } = await other.call(ShellStart, { sessionId: 'b', command: 'sleep 300' });
    const samples: number[] = [];
    for (let i = 0; i < 30; i++) {
      const started = performance.now();
      const result = await other.call(JobWait, {
        sessionId: 'b',
        jobId: otherJob,
        until: { output: 'x' },
        timeoutMs: 20,
      });
      samples.push(performance.now() - started - 20);
      expect(result.endedBy).toBe('timeout');
    }
    const p99 = percentile(samples, 99);
    console.log(
      `another session's job/wait (beyond its 20 ms timeout) beside 64 open waits: p50 ${percentile(samples, 50).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms`,
    );
    expect(p99).toBeLessThan(500);
    // The hog's connection goes away: its waits end, and a new one of the session is accepted.
    hog.close();
    const again = await daemon.session('hog');
    const error = await rejection(again.call(JobWait, { sessionId: 'hog', jobId: 'bash-999', timeoutMs: 10 }));
    expect(error.errorName).toBe('JOB_NOT_FOUND');
    const result = await again.call(JobWait, { sessionId: 'hog', jobId, timeoutMs: 10 });
    expect(result.endedBy).toBe('timeout');
  });
});
