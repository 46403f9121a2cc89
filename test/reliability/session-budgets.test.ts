/**
 * Per-session budgets beside the daemon-wide ones: one session that forks past `maxProcesses`
 * (130 `setsid sleep` from one read-only run) is refused further spawns by
 * `maxProcessesPerSession`, and holds no more of `maxProcesses` than that, so another session's
 * runs keep working with a p99 under 500 ms; a burst of concurrent spawns cannot overshoot the
 * limit (the process is reserved before the first await).
 */
import { describe, expect, it } from 'vitest';
import { DaemonStatus, SessionClose, SessionOpen, ShellRun } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { rejection } from '../helpers/rejection.js';
import { waitFor } from '../helpers/wait.js';

/** The p-th percentile of `samples` (ms). */
function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

describe('per-session process budgets', { timeout: 120_000 }, () => {
  it('130 setsid sleeps from one read-only session leave another session its runs, p99 < 500 ms', async () => {
    const daemon = await startDaemon({ config: { graceMs: 200 } });
    const attacker = await daemon.connect();
    await attacker.call(SessionOpen, { sessionId: 'a', cwd: daemon.dir, sandbox: { mode: 'read-only' } });
    // One run, so no spawn limit stops it: each sleep leaves the run's group and session.
    const fork = 'for i in $(seq 130); do setsid sleep 300 </dev/null >/dev/null 2>&1 & done';
    const forked = await attacker.run({ sessionId: 'a', command: fork, timeoutMs: 30_000 });
    expect(forked.exitCode).toBe(0);
    // All of them count: past the daemon-wide maxProcesses (128) on their own.
    await waitFor(async () => (await attacker.call(DaemonStatus, {})).processes >= 130, '130 escaped groups counted');
    const other = await daemon.session('b');
    // The attacker's own next spawn is refused by its session's limit.
    const refused = await rejection(attacker.call(ShellRun, { sessionId: 'a', command: 'true' }));
    expect(refused.errorName).toBe('LIMIT_EXCEEDED');
    expect(refused.message).toContain('maxProcessesPerSession');
    const samples: number[] = [];
    for (let i = 0; i < 40; i++) {
      const started = performance.now();
      const result = await other.run({ sessionId: 'b', command: 'echo ok' });
      samples.push(performance.now() - started);
      expect(result.exitCode).toBe(0);
    }
    const p99 = percentile(samples, 99);
    console.log(
      `another session's shell/run while 130 escaped sleeps run: p50 ${percentile(samples, 50).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms`,
    );
    expect(p99).toBeLessThan(500);
    await attacker.call(SessionClose, { sessionId: 'a' });
  });

  it('40 concurrent runs against maxProcessesPerSession 8: exactly 8 start, 32 are refused', async () => {
    const daemon = await startDaemon({ config: { maxProcessesPerSession: 8 } });
    const client = await daemon.session('burst');
    const outcomes = await Promise.allSettled(
      Array.from({ length: 40 }, () => client.call(ShellRun, { sessionId: 'burst', command: 'sleep 1.5' })),
    );
    const started = outcomes.filter((outcome) => outcome.status === 'fulfilled');
    const refused = outcomes.filter(
      (outcome) =>
        outcome.status === 'rejected' && String((outcome.reason as Error).message).includes('maxProcessesPerSession'),
    );
    expect(started).toHaveLength(8);
    expect(refused).toHaveLength(32);
  });
});
