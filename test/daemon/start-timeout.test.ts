/**
 * `shell/start` accepts the `ExecRequest`'s `timeoutMs` and a job ignores it by design (PROTOCOL.md,
 * docs/jobs.md): the same request object serves `shell/run` and `shell/start`, and a job is bounded
 * with `job/wait` and `job/kill` instead.
 */
import { describe, expect, it } from 'vitest';
import { JobPeek, JobWait, ShellStart } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';

describe('shell/start and timeoutMs', { timeout: 60_000 }, () => {
  it('a job outlives the timeoutMs it was started with and completes on its own', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const sessionId = 's1';
    const { jobId } = await client.call(ShellStart, { sessionId, command: 'sleep 1; echo done', timeoutMs: 200 });
    const job = await client.call(JobWait, { sessionId, jobId, timeoutMs: 20_000 });
    const ranMs = Date.parse(job.finishedAt!) - Date.parse(job.startedAt);
    console.log(`job started with timeoutMs 200 ran ${ranMs} ms and settled ${job.status}`);
    expect(job).toMatchObject({ status: 'completed', exitCode: 0 });
    expect(ranMs).toBeGreaterThanOrEqual(1_000);
    expect((await client.call(JobPeek, { sessionId, jobId })).stdout.text).toBe('done\n');
  });

  it('a timeoutMs that is not a positive number is still refused, naming the field', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const refused = await client
      .call(ShellStart, { sessionId: 's1', command: 'true', timeoutMs: -1 })
      .catch((error: Error) => error.message);
    console.log(`shell/start timeoutMs -1: ${JSON.stringify(refused)}`);
    expect(refused).toBe('timeoutMs must be a positive finite number');
  });
});
