/** Stdin of background jobs (SPEC §9.4) against a real daemon: keepStdinOpen, job/write, eof, STDIN_CLOSED. */
import { describe, expect, test } from 'vitest';
import { JobPeek, JobWait, JobWrite, ShellStart } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';

describe('job stdin', () => {
  test('job/write feeds a job started with keepStdinOpen; eof ends it; later writes are STDIN_CLOSED', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const sessionId = 's1';
    const reader = `while IFS= read -r line; do echo "got $line"; done; echo "eof seen"`;
    // Two jobs alive at once: the second is spawned by the spawner process, the first in the daemon.
    const first = await client.call(ShellStart, {
      sessionId,
      command: reader,
      keepStdinOpen: true,
      stdin: 'initial\n',
    });
    const second = await client.call(ShellStart, { sessionId, command: reader, keepStdinOpen: true });
    for (const { jobId } of [first, second]) {
      expect(await client.call(JobWrite, { sessionId, jobId, data: 'hello\n' })).toEqual({ written: 6 });
      await client.call(JobWrite, { sessionId, jobId, data: 'wörld\n' });
      await waitFor(
        async () => (await client.call(JobPeek, { sessionId, jobId })).stdout.text.includes('got wörld'),
        `${jobId} to echo its input`,
      );
      expect(await client.call(JobWrite, { sessionId, jobId, data: 'last\n', eof: true })).toEqual({ written: 5 });
      const settled = await client.call(JobWait, { sessionId, jobId, timeoutMs: 10_000 });
      expect(settled).toMatchObject({ status: 'completed', exitCode: 0 });
      await expect(client.call(JobWrite, { sessionId, jobId, data: 'late\n' })).rejects.toMatchObject({
        errorName: 'STDIN_CLOSED',
        code: -32012,
      });
    }
    const out = (await client.call(JobPeek, { sessionId, jobId: first.jobId })).stdout.text;
    expect(out).toBe('got initial\ngot hello\ngot wörld\ngot last\neof seen\n');
  });

  test('a job without keepStdinOpen, or one that settled, answers STDIN_CLOSED', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const plain = await client.call(ShellStart, { sessionId: 's1', command: 'sleep 5' });
    await expect(client.call(JobWrite, { sessionId: 's1', jobId: plain.jobId, data: 'x' })).rejects.toMatchObject({
      errorName: 'STDIN_CLOSED',
      message: `job ${plain.jobId} was not started with keepStdinOpen`,
    });
    const quick = await client.call(ShellStart, { sessionId: 's1', command: 'true', keepStdinOpen: true });
    await client.call(JobWait, { sessionId: 's1', jobId: quick.jobId, timeoutMs: 10_000 });
    await expect(client.call(JobWrite, { sessionId: 's1', jobId: quick.jobId, data: 'x' })).rejects.toMatchObject({
      errorName: 'STDIN_CLOSED',
    });
  });
});
