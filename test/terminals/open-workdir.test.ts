/**
 * One launch path (daemon/runs/launch.ts): a missing working directory is answered the same way
 * by `shell/run`, `shell/start` and `terminal/open` (SPEC §3: SPAWN_FAILED naming the path).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ShellStart, TerminalOpen } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { waitJob } from '../helpers/jobs.js';
import { rejection } from '../helpers/rejection.js';

describe('a missing working directory', () => {
  it('answers SPAWN_FAILED "workdir does not exist: <path>" for a run and a terminal, and fails a job with it', async () => {
    const daemon = await startDaemon();
    const sessionId = 's1';
    const client = await daemon.session(sessionId);
    const missing = join(daemon.dir, 'no-such-dir');

    const run = await rejection(client.run({ sessionId, command: 'true', workdir: missing }));
    const terminal = await rejection(client.call(TerminalOpen, { sessionId, cwd: missing }));
    for (const error of [run, terminal]) {
      expect(error.errorName).toBe('SPAWN_FAILED');
      expect(error.message).toBe(`workdir does not exist: ${missing}`);
    }

    const { jobId } = await client.call(ShellStart, { sessionId, command: 'true', workdir: missing });
    const job = await waitJob(client, sessionId, jobId);
    expect(job).toMatchObject({ status: 'failed', detail: `spawn failed: workdir does not exist: ${missing}` });
  });
});
