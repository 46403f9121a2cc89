/**
 * The pattern thread is shared fairly: one session keeps 40 waits with a catastrophic pattern
 * queued (each runs into the 250 ms check budget, and is asked again as soon as it fails), and
 * another session's simple `until.output` wait is still answered within 500 ms, because the
 * checker takes one check of each waiting session in turn.
 */
import { describe, expect, it } from 'vitest';
import { JobWait, ShellStart } from '../../../protocol/methods.js';
import { startDaemon } from '../../helpers/daemon.js';
import { waitFor } from '../../helpers/wait.js';

/** The p-th percentile of `samples` (ms). */
function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

describe('pattern thread share', { timeout: 120_000 }, () => {
  it("40 slow patterns of one session delay another session's simple wait by less than 500 ms", async () => {
    const daemon = await startDaemon();
    const flood = await daemon.session('flood');
    const slow = await flood.call(ShellStart, {
      sessionId: 'flood',
      command: `printf '${'a'.repeat(40)}x\\n'; sleep 300`,
    });
    let flooding = true;
    let failedChecks = 0;
    // Each of 40 loops asks again as soon as its wait failed on the budget: the queue stays full.
    const loops = Array.from({ length: 40 }, async () => {
      while (flooding) {
        await flood
          .call(JobWait, { sessionId: 'flood', jobId: slow.jobId, timeoutMs: 60_000, until: { output: '^(a+)+$' } })
          .then(
            () => {},
            (error: Error) => {
              // Cut at the budget: asked again. Anything else (the daemon gone) ends the loop.
              if (!/ran longer than/.test(error.message)) flooding = false;
              failedChecks += 1;
            },
          );
      }
    });
    const other = await daemon.session('other');
    const printer = await other.call(ShellStart, { sessionId: 'other', command: 'echo ready; sleep 300' });
    // The flood is under way: several of its checks already ran into the budget.
    await waitFor(() => failedChecks >= 4, 'four slow checks cut at the budget', { timeoutMs: 30_000 });

    const samples: number[] = [];
    for (let i = 0; i < 12; i++) {
      const started = performance.now();
      const answer = await other.call(JobWait, {
        sessionId: 'other',
        jobId: printer.jobId,
        timeoutMs: 30_000,
        until: { output: 'ready' },
      });
      samples.push(performance.now() - started);
      expect(answer.endedBy).toBe('output');
    }
    flooding = false;
    await Promise.all(loops);
    expect(samples).toHaveLength(12);
    const p99 = percentile(samples, 99);
    console.log(
      `[pattern share] another session's simple wait beside 40 slow patterns (${failedChecks} checks cut at the budget): ` +
        `p50 ${percentile(samples, 50).toFixed(0)} ms, max ${p99.toFixed(0)} ms (${samples.map((ms) => ms.toFixed(0)).join(' ')})`,
    );
    expect(p99).toBeLessThan(500);
  });
});
