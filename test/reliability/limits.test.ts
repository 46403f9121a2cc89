/**
 * Issue 6, test 4: each configured limit is hit for real, answered LIMIT_EXCEEDED naming the limit
 * and its value, and the daemon serves the next request.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ExecdRpcError, type ExecdClient } from '../../client/connection.js';
import { DaemonStatus, JobKill, SessionClose, SessionOpen, ShellRun, ShellStart } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { startHeldRun } from '../helpers/held-run.js';
import { rawAuthed } from '../helpers/raw.js';
import { waitFor } from '../helpers/wait.js';
import { rejection } from '../helpers/rejection.js';

async function expectServed(client: ExecdClient, sessionId: string): Promise<void> {
  const result = await client.run({ sessionId, command: 'echo next' });
  expect(result.stdout.text).toBe('next\n');
}

describe('limits', () => {
  it('maxProcesses: a run past the limit is refused; the next one after a slot frees runs', async () => {
    const daemon = await startDaemon({ config: { maxProcesses: 2 } });
    const client = await daemon.session('s1');
    const controllers = [new AbortController(), new AbortController()];
    const running = controllers.map((controller) =>
      client.run({ sessionId: 's1', command: 'sleep 30' }, { signal: controller.signal }),
    );
    await waitFor(async () => (await client.call(DaemonStatus, {})).processes === 2, 'two processes');
    const error = await rejection(client.run({ sessionId: 's1', command: 'echo three' }));
    expect(error.errorName).toBe('LIMIT_EXCEEDED');
    expect(error.message).toBe('maxProcesses limit reached (2)');
    controllers[0]!.abort();
    expect((await running[0]!).aborted).toBe(true);
    await expectServed(client, 's1');
    controllers[1]!.abort();
    await running[1];
    console.log(`limits: maxProcesses=2 refused the 3rd concurrent run ("${error.message}"), next run served`);
  });

  it('maxJobsPerSession: a job past the limit is refused; another session and a freed slot are served', async () => {
    const daemon = await startDaemon({ config: { maxJobsPerSession: 2 } });
    const client = await daemon.session('s1');
    await client.call(SessionOpen, { sessionId: 's2', cwd: daemon.dir });
    const jobs = [
      await client.call(ShellStart, { sessionId: 's1', command: 'sleep 300' }),
      await client.call(ShellStart, { sessionId: 's1', command: 'sleep 300' }),
    ];
    const error = await rejection(client.call(ShellStart, { sessionId: 's1', command: 'sleep 300' }));
    expect(error.errorName).toBe('LIMIT_EXCEEDED');
    expect(error.message).toBe('maxJobsPerSession limit reached (2)');
    // The limit is per session: another session still starts jobs.
    const other = await client.call(ShellStart, { sessionId: 's2', command: 'true' });
    expect(other.jobId).toMatch(/^bash-\d+$/);
    expect(await client.call(JobKill, { sessionId: 's1', jobId: jobs[0]!.jobId })).toEqual({ killed: true });
    const third = await client.call(ShellStart, { sessionId: 's1', command: 'true' });
    expect(third.jobId).toMatch(/^bash-\d+$/);
    await expectServed(client, 's1');
    console.log(
      `limits: maxJobsPerSession=2 refused the 3rd running job ("${error.message}"); another session and a freed slot were served`,
    );
  });

  it('maxStdinBytes: stdin one byte past the limit is refused; exactly the limit runs', async () => {
    const daemon = await startDaemon({ config: { maxStdinBytes: 1000 } });
    const client = await daemon.session('s1');
    const error = await rejection(client.run({ sessionId: 's1', command: 'wc -c', stdin: 'x'.repeat(1001) }));
    expect(error.errorName).toBe('LIMIT_EXCEEDED');
    expect(error.message).toBe('stdin is larger than maxStdinBytes (1000)');
    const fits = await client.run({ sessionId: 's1', command: 'wc -c', stdin: 'x'.repeat(1000) });
    expect(fits.stdout.text.trim()).toBe('1000');
    console.log(`limits: maxStdinBytes=1000 refused 1001 bytes ("${error.message}"), 1000 bytes ran`);
  });

  it('maxSessions: a session past the limit is refused; after a close a new one opens', async () => {
    const daemon = await startDaemon({ config: { maxSessions: 2 } });
    const client = await daemon.connect();
    await client.call(SessionOpen, { sessionId: 'a', cwd: daemon.dir });
    await client.call(SessionOpen, { sessionId: 'b', cwd: daemon.dir });
    const error = await rejection(client.call(SessionOpen, { sessionId: 'c', cwd: daemon.dir }));
    expect(error.errorName).toBe('LIMIT_EXCEEDED');
    expect(error.message).toBe('maxSessions limit reached (2)');
    // Reopening an existing session is not a new one.
    expect((await client.call(SessionOpen, { sessionId: 'a', cwd: daemon.dir })).reattached).toBe(true);
    await client.call(SessionClose, { sessionId: 'b' });
    await client.call(SessionOpen, { sessionId: 'c', cwd: daemon.dir });
    await expectServed(client, 'c');
    console.log(`limits: maxSessions=2 refused the 3rd session ("${error.message}"), next open served`);
  });

  it('maxMessageBytes: an oversized message closes that connection only, with LIMIT_EXCEEDED', async () => {
    const daemon = await startDaemon({ config: { maxMessageBytes: 100_000 } });
    const bystander = await daemon.session('s2');
    const raw = await rawAuthed(daemon.socketPath, daemon.stateDir);
    await raw.request(SessionOpen.method, { sessionId: 's1', cwd: daemon.dir });
    // Just under the cap is a normal request.
    const fits = await raw.request(ShellRun.method, { sessionId: 's1', command: 'wc -c', stdin: 'y'.repeat(90_000) });
    expect((fits?.result as { stdout: { text: string } }).stdout.text.trim()).toBe('90000');
    // The header announces 50 MB; the daemon answers and hangs up without waiting for the body.
    raw.sendBytes('Content-Length: 50000000\r\n\r\n{"jsonrpc":"2.0","id":1,');
    await raw.closed;
    const answer = raw.messages.at(-1);
    expect(answer).toMatchObject({ id: null, error: { code: -32008, data: { code: 'LIMIT_EXCEEDED' } } });
    expect(answer?.error?.message).toBe('message of 50000000 bytes is larger than maxMessageBytes (100000)');
    await expectServed(bystander, 's2');
    console.log(
      `limits: maxMessageBytes=100000 closed the connection announcing 50 MB ("${answer?.error?.message}"); a 90 KB message and another client's next run served`,
    );
  });

  it('spillQuotaBytes: spill files of a running command fill the quota; runs are refused until the sweep frees it', async () => {
    const daemon = await startDaemon({ config: { spillQuotaBytes: 1_000_000, maxOutputBytes: 1_000 } });
    const client = await daemon.session('s1');
    const held = await startHeldRun(client, 's1', 2_000_000);
    const refused = await waitFor(
      async () => {
        const outcome = await client.run({ sessionId: 's1', command: 'true' }).catch((error: unknown) => error);
        return outcome instanceof ExecdRpcError ? outcome : undefined;
      },
      'a run to be refused for the spill quota',
      { intervalMs: 200 },
    );
    expect(refused.errorName).toBe('LIMIT_EXCEEDED');
    expect(refused.message).toMatch(/^spillQuotaBytes limit reached \(1000000\)/);
    expect((await client.call(DaemonStatus, {})).spill.bytes).toBeGreaterThanOrEqual(2_000_000);
    const settled = await held.abort();
    expect(settled.stdout.spillPath).toBeDefined();
    // Once settled, the file is the oldest closed one past the quota: the sweep removes it.
    await waitFor(() => !existsSync(settled.stdout.spillPath!), 'the sweep to remove the settled spill file');
    const served = await waitFor(
      async () => (await client.run({ sessionId: 's1', command: 'echo next' }).catch(() => undefined))?.stdout.text,
      'runs to be served again',
      { intervalMs: 200 },
    );
    expect(served).toBe('next\n');
    console.log(
      `limits: spillQuotaBytes=1000000 refused runs while a running command held 2000000 spill bytes ("${refused.message}"); after it settled the sweep removed its file and the next run was served`,
    );
  });
});
