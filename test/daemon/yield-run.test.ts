/**
 * `shell/run` with `yieldMs` against a real daemon (SPEC §14): a command still running then goes
 * on as a background job of the session (same process, output so far answered and not read
 * again), one that ends sooner answers the usual result and leaves no job; a keyed re-send answers
 * the same yielded answer; the CLI's `--yield` prints the job and exits 0.
 */
import { describe, expect, it } from 'vitest';
import { isYielded } from '../../client/connection.js';
import { JobList, JobRead, JobWait, ShellRun } from '../../protocol/methods.js';
import type { YieldedRunResult } from '../../protocol/types.js';
import { cliWorld } from '../helpers/cli.js';
import { startDaemon } from '../helpers/daemon.js';
import { rejection } from '../helpers/rejection.js';

describe('shell/run yieldMs', { timeout: 60_000 }, () => {
  it('a yieldMs 500 run of `sleep 2; echo done` yields at ~0.5 s; its job later reads done and exit 0', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const started = performance.now();
    const result = await client.run({ sessionId: 's1', command: 'echo before; sleep 2; echo done', yieldMs: 500 });
    const answeredMs = Math.round(performance.now() - started);
    console.log(`yielded answer after ${answeredMs} ms (daemon says ${isYielded(result) && result.durationMs} ms)`);
    expect(isYielded(result)).toBe(true);
    const yielded = result as YieldedRunResult;
    expect(yielded).toMatchObject({ yielded: true, stdout: { text: 'before\n', truncated: false } });
    expect(answeredMs).toBeGreaterThanOrEqual(450);
    expect(answeredMs).toBeLessThan(1_800);
    // The same process goes on as the session's job.
    const listed = await client.call(JobList, { sessionId: 's1' });
    expect(listed.map((job) => [job.id, job.status, job.pid])).toEqual([[yielded.jobId, 'running', yielded.pid]]);
    const settled = await client.call(JobWait, { sessionId: 's1', jobId: yielded.jobId, timeoutMs: 20_000 });
    console.log(
      `job ${yielded.jobId} settled ${settled.status} (${settled.detail}) ${Math.round(performance.now() - started)} ms after the run was sent`,
    );
    expect(settled).toMatchObject({ status: 'completed', exitCode: 0 });
    // What the answer held is not read again.
    const read = await client.call(JobRead, { sessionId: 's1', jobId: yielded.jobId });
    expect(read.delta).toBe('done\n');
  });

  it('a command that ends before yieldMs answers the usual result and leaves no job', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const started = performance.now();
    const result = await client.run({ sessionId: 's1', command: 'echo out; echo err >&2; exit 3', yieldMs: 10_000 });
    console.log(`fast run answered after ${Math.round(performance.now() - started)} ms`);
    expect(isYielded(result)).toBe(false);
    expect(result).toMatchObject({
      exitCode: 3,
      signal: null,
      timedOut: false,
      aborted: false,
      stdout: { text: 'out\n', truncated: false },
      stderr: { text: 'err\n', truncated: false },
    });
    expect('spillPath' in result.stdout).toBe(false);
    expect(await client.call(JobList, { sessionId: 's1' })).toEqual([]);
    // The run's timeout still holds before a yield.
    const timed = await client.run({ sessionId: 's1', command: 'sleep 30', timeoutMs: 300, yieldMs: 5_000 });
    expect(timed).toMatchObject({ timedOut: true, aborted: false });
    expect(await client.call(JobList, { sessionId: 's1' })).toEqual([]);
  });

  it('a keyed re-send after the yield answers the same yielded answer and starts nothing', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const params = { sessionId: 's1', command: 'sleep 3', yieldMs: 200, requestKey: 'yield-1' };
    const first = await client.call(ShellRun, params);
    const again = await client.call(ShellRun, params);
    expect(again).toEqual(first);
    const jobs = await client.call(JobList, { sessionId: 's1' });
    console.log(`jobs after a keyed re-send: ${jobs.length}`);
    expect(jobs).toHaveLength(1);
  });

  it('yieldMs is checked by its schema and refused with a streamed run or a full job table', async () => {
    const daemon = await startDaemon({ config: { maxJobsPerSession: 1 } });
    const client = await daemon.session('s1');
    const zero = await rejection(client.call(ShellRun, { sessionId: 's1', command: 'true', yieldMs: 0 }));
    expect(zero.errorName).toBe('INVALID_PARAMS');
    expect(zero.message).toContain('yieldMs must be between 1 and 86400000');
    const streamed = client.call(ShellRun, { sessionId: 's1', command: 'true', yieldMs: 10, outputToken: 't' });
    expect((await rejection(streamed)).message).toContain('yieldMs: excludes outputToken');
    const held = await client.run({ sessionId: 's1', command: 'sleep 5', yieldMs: 100 });
    expect(isYielded(held)).toBe(true);
    const full = await rejection(client.run({ sessionId: 's1', command: 'sleep 5', yieldMs: 100 }));
    console.log(`with the job table full: ${full.message}`);
    expect(full.errorName).toBe('LIMIT_EXCEEDED');
    expect(full.message).toContain('maxJobsPerSession');
  });

  it('execd run --yield 500ms prints the job and how to go on, and exits 0', async () => {
    const world = cliWorld();
    const started = performance.now();
    const run = await world.run(['run', '--yield', '500ms', '--', 'echo first; sleep 3; echo second']);
    console.log(`execd run --yield exited ${run.code} after ${Math.round(performance.now() - started)} ms`);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('first\n');
    const job = /background job (bash-\d+)/.exec(run.stderr)?.[1];
    expect(job).toBeDefined();
    expect(run.stderr).toContain(`execd read ${job} | execd wait ${job} | execd kill ${job}`);
    const waited = await world.run(['wait', job!, '--timeout', '20000']);
    expect(waited.code).toBe(0);
    expect((await world.run(['read', job!])).stdout).toBe('second\n');
    const fast = await world.run(['run', '--yield', '10s', '--', 'echo quick; exit 4']);
    expect(fast).toMatchObject({ code: 4, stdout: 'quick\n' });
  });
});
