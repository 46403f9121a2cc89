/**
 * Issue 13, point 11: a run settles as soon as its shell has exited and nothing still holds its
 * output. A background process that let go of the output (`sleep 600 >/dev/null 2>&1 &`, the way
 * a dev server is started) costs nothing; one that still holds it keeps the run at most `graceMs`
 * (SPEC §1.3). Plain runs have no pipes: "holds" means a live member of the run's process group
 * has a capture file open (found in /proc/<pid>/fd).
 */
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { JobWait, ShellStart } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { alivePids } from '../helpers/procs.js';

/** Large enough that a run waiting for it could never be mistaken for one that did not. */
const GRACE_MS = 20_000;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

describe('run settlement', () => {
  it('answers at once when a background process let go of the output, waits while one holds it', async () => {
    const daemon = await startDaemon({ config: { graceMs: GRACE_MS } });
    const client = await daemon.session('s');

    const freed = await client.run({
      sessionId: 's',
      command: 'sleep 600 >/dev/null 2>&1 & echo started; echo $! >&2',
    });
    expect(freed.stdout.text).toBe('started\n');
    expect(freed.durationMs).toBeLessThan(GRACE_MS / 2);
    const leftover = Number(freed.stderr.text.trim());
    expect(alivePids([leftover])).toEqual([leftover]);

    // The same through the streamed path (pipes) and for a job (stdout log file, stderr pipe).
    const streamed = await client.run(
      { sessionId: 's', command: 'sleep 600 >/dev/null 2>&1 & echo started' },
      { onOutput: () => {} },
    );
    expect(streamed.durationMs).toBeLessThan(GRACE_MS / 2);
    const job = await client.call(ShellStart, { sessionId: 's', command: 'sleep 600 >/dev/null 2>&1 & echo started' });
    const jobStarted = performance.now();
    const settled = await client.call(JobWait, { sessionId: 's', jobId: job.jobId, timeoutMs: GRACE_MS * 2 });
    const jobMs = performance.now() - jobStarted;
    expect(settled.status).toBe('completed');
    expect(jobMs).toBeLessThan(GRACE_MS / 2);

    // A descendant that still holds stdout (or only stderr) keeps the run until it lets go.
    const heldStdout = await client.run({ sessionId: 's', command: 'sleep 1 2>/dev/null & echo held' });
    expect(heldStdout.stdout.text).toBe('held\n');
    expect(heldStdout.durationMs).toBeGreaterThanOrEqual(900);
    expect(heldStdout.durationMs).toBeLessThan(GRACE_MS / 2);
    const heldStderr = await client.run({ sessionId: 's', command: '(sleep 1 >/dev/null; echo late >&2) & echo held' });
    expect(heldStderr.stderr.text).toBe('late\n');
    // A child forked by a holder that then exits still counts.
    const handedOn = await client.run({
      sessionId: 's',
      command: '(sleep 0.3; (sleep 1; echo child) & ) & echo first',
    });
    expect(handedOn.stdout.text).toBe('first\nchild\n');

    console.log(
      `settle with graceMs ${GRACE_MS}: 'sleep 600 >/dev/null 2>&1 & echo started' ${freed.durationMs} ms ` +
        `(streamed ${streamed.durationMs} ms, as a job ${jobMs.toFixed(0)} ms); ` +
        `'sleep 1 & echo held' ${heldStdout.durationMs} ms; stderr held ${heldStderr.durationMs} ms; ` +
        `held by a grandchild ${handedOn.durationMs} ms`,
    );
  });

  it('a holder that never lets go keeps the run at most graceMs', async () => {
    const daemon = await startDaemon({ config: { graceMs: 1_000 } });
    const client = await daemon.session('s');
    const result = await client.run({ sessionId: 's', command: 'sleep 600 & echo held' });
    expect(result.stdout.text).toBe('held\n');
    expect(result.durationMs).toBeGreaterThanOrEqual(900);
    console.log(`holder that never lets go, graceMs 1000: settled after ${result.durationMs} ms`);
  });

  it('keeps plain runs fast: 200 sequential runs of true', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s');
    for (let i = 0; i < 10; i++) await client.run({ sessionId: 's', command: 'true' });
    const times: number[] = [];
    for (let i = 0; i < 200; i++) {
      const started = performance.now();
      const result = await client.run({ sessionId: 's', command: 'true' });
      times.push(performance.now() - started);
      expect(result.exitCode).toBe(0);
    }
    const sorted = [...times].sort((a, b) => a - b);
    console.log(
      `200 sequential shell/run of true: p50 ${median(times).toFixed(2)} ms, p99 ${sorted[197]!.toFixed(2)} ms`,
    );
  });
});
