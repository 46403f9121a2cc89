/**
 * Request keys and runs that outlive their connection (SPEC §14), with the damage done for real:
 * the client's side of the socket is closed while the daemon still owes an answer, and the same
 * request is sent again from a new connection of the session.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExecdRpcError } from '../../../client/connection.js';
import { JobKill, JobList, JobWrite, SessionOpen, ShellRun, ShellStart } from '../../../protocol/methods.js';
import type { ShellRunResult } from '../../../protocol/types.js';
import { startDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { pidAlive } from '../../helpers/procs.js';
import { rawAuthed } from '../../helpers/raw.js';
import { waitFor } from '../../helpers/wait.js';

/** Lines of the file the test's commands append to: how many times a command really ran. */
function timesRan(path: string): number {
  return existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean).length : 0;
}

/** The pid a command wrote to `path`, once it did. */
function readPid(path: string): Promise<number> {
  return waitFor(() => (existsSync(path) ? Number(readFileSync(path, 'utf8')) : 0), `a pid in ${path}`);
}

/**
 * Sends `method` on a fresh raw connection of session `sessionId`, waits until `acted()` shows the
 * daemon acted on it, then closes the connection with its answer unread: paused right after the
 * send, the socket reads nothing more, so whatever the daemon answered is lost with it.
 */
async function sendAndCut(
  daemon: TestDaemon,
  sessionId: string,
  method: string,
  params: object,
  acted: () => boolean,
): Promise<void> {
  const raw = await rawAuthed(daemon.socketPath, daemon.stateDir);
  const opened = await raw.request(SessionOpen.method, { sessionId, cwd: daemon.dir });
  expect(opened?.result).toBeDefined();
  raw.send({ jsonrpc: '2.0', id: 1, method, params: { sessionId, ...params } });
  raw.socket.pause();
  await waitFor(acted, `the daemon to act on ${method}`);
  raw.socket.destroy();
  await raw.closed;
  expect(raw.messages.some((message) => message.id === 1)).toBe(false);
}

describe('request keys', () => {
  it('a keyed shell/start whose answer was lost and which is re-sent after the cut starts exactly one job', async () => {
    const daemon = await startDaemon();
    const count = join(daemon.dir, 'count');
    const params = { command: `echo ran >> ${count}; exec sleep 30`, requestKey: 'start-1' };
    // The first one acts; its answer is lost with the connection.
    await sendAndCut(daemon, 's1', ShellStart.method, params, () => timesRan(count) === 1);
    const client = await daemon.session('s1');
    const again = await client.call(ShellStart, { sessionId: 's1', ...params });
    const jobs = await client.call(JobList, { sessionId: 's1' });
    console.log(`jobs after the re-send: ${jobs.length}, times the command ran: ${timesRan(count)}`);
    expect(jobs.map((job) => job.id)).toEqual([again.jobId]);
    expect(timesRan(count)).toBe(1);

    // The same key with other params is refused, and acts no more.
    const reused = await client
      .call(ShellStart, { sessionId: 's1', command: 'echo other', requestKey: 'start-1' })
      .catch((error: unknown) => error);
    expect(reused).toBeInstanceOf(ExecdRpcError);
    expect((reused as ExecdRpcError).errorName).toBe('INVALID_PARAMS');
    expect((reused as ExecdRpcError).message).toBe('requestKey: requestKey reused with other params');
    expect(await client.call(JobList, { sessionId: 's1' })).toHaveLength(1);

    // A keyed kill repeated answers its first answer (true), not "already settled" (false).
    const first = await client.call(JobKill, { sessionId: 's1', jobId: again.jobId, requestKey: 'kill-1' });
    const repeat = await client.call(JobKill, { sessionId: 's1', jobId: again.jobId, requestKey: 'kill-1' });
    expect([first.killed, repeat.killed]).toEqual([true, true]);
    const unkeyed = await client.call(JobKill, { sessionId: 's1', jobId: again.jobId });
    expect(unkeyed.killed).toBe(false);
  });

  it('a repeat while the first is in flight waits for its answer; keys are per session and bounded in count', async () => {
    const daemon = await startDaemon({ config: { maxRequestKeysPerSession: 2 } });
    const count = join(daemon.dir, 'count');
    const a = await daemon.session('a');
    const params = { sessionId: 'a', command: `echo ran >> ${count}; sleep 1; echo out`, requestKey: 'r' };
    const [first, second] = await Promise.all([a.call(ShellRun, params), a.call(ShellRun, params)]);
    expect(second).toEqual(first);
    expect(first.stdout.text).toBe('out\n');
    expect(timesRan(count)).toBe(1);

    // Another session's same key is another request.
    const b = await daemon.session('b');
    await b.call(ShellRun, { ...params, sessionId: 'b' });
    expect(timesRan(count)).toBe(2);

    // Two keys in flight fill the bound of 2: a third is refused, and an answered key makes room.
    const job = await a.call(ShellStart, { sessionId: 'a', command: 'cat', keepStdinOpen: true });
    const slow = a.call(ShellRun, { sessionId: 'a', command: 'sleep 2', requestKey: 'slow-1' });
    const slow2 = a.call(ShellRun, { sessionId: 'a', command: 'sleep 2', requestKey: 'slow-2' });
    await waitFor(async () => (await a.call(JobList, { sessionId: 'a' })).length === 1, 'the job');
    const refused = await a
      .call(JobWrite, { sessionId: 'a', jobId: job.jobId, data: 'x', requestKey: 'w' })
      .catch((error: unknown) => error);
    expect((refused as ExecdRpcError).errorName).toBe('LIMIT_EXCEEDED');
    expect((refused as ExecdRpcError).message).toContain('maxRequestKeysPerSession');
    await Promise.all([slow, slow2]);
    await a.call(JobWrite, { sessionId: 'a', jobId: job.jobId, data: 'x', requestKey: 'w' });
    // The oldest answered key ('r') was forgotten to make room: it acts again.
    await a.call(ShellRun, params);
    expect(timesRan(count)).toBe(3);
  });
});

describe('runs that outlive their connection', () => {
  it('a 20 s shell/run cut at 5 s is collected whole from a new connection and ran once', async () => {
    const daemon = await startDaemon();
    const count = join(daemon.dir, 'count');
    const params = {
      command: `echo ran >> ${count}; echo begin; sleep 20; echo end; echo err >&2`,
      requestKey: 'run-20s',
    };
    const started = Date.now();
    const raw = await rawAuthed(daemon.socketPath, daemon.stateDir);
    await raw.request(SessionOpen.method, { sessionId: 's', cwd: daemon.dir });
    raw.send({ jsonrpc: '2.0', id: 1, method: ShellRun.method, params: { sessionId: 's', ...params } });
    await waitFor(() => timesRan(count) === 1, 'the run to start');
    await new Promise((resolve) => setTimeout(resolve, 5_000 - (Date.now() - started)));
    raw.socket.end();
    await raw.closed;
    const cutAt = Date.now() - started;

    const client = await daemon.session('s');
    const result = (await client.call(ShellRun, { sessionId: 's', ...params })) as ShellRunResult;
    const answeredAt = Date.now() - started;
    console.log(
      `cut at ${cutAt} ms, collected at ${answeredAt} ms, exit ${result.exitCode}, duration ${Math.round(result.durationMs)} ms, ran ${timesRan(count)} time(s)`,
    );
    expect(result).toMatchObject({ exitCode: 0, aborted: false, timedOut: false });
    expect(result.stdout.text).toBe('begin\nend\n');
    expect(result.stderr.text).toBe('err\n');
    expect(result.durationMs).toBeGreaterThanOrEqual(20_000);
    expect(timesRan(count)).toBe(1);
  }, 90_000);

  it('an abandoned keyed run is aborted after reconnectGraceMs; a cancel from the new connection aborts at once', async () => {
    const graceMs = 1_500;
    const daemon = await startDaemon({ config: { reconnectGraceMs: graceMs } });
    const pidFile = join(daemon.dir, 'pid');
    const command = `echo $$ > ${pidFile}; exec sleep 60`;
    await sendAndCut(daemon, 's', ShellRun.method, { command, requestKey: 'a' }, () => existsSync(pidFile));
    const cutAt = Date.now();
    const pid = await readPid(pidFile);
    await waitFor(() => !pidAlive(pid), 'the abandoned run to be aborted', { timeoutMs: 30_000 });
    const abortedAfter = Date.now() - cutAt;
    console.log(`abandoned run aborted ${abortedAfter} ms after the cut (grace ${graceMs} ms)`);
    expect(abortedAfter).toBeGreaterThanOrEqual(graceMs - 100);

    // Re-attached, then cancelled explicitly: aborted at once, not after a grace.
    const pidFile2 = join(daemon.dir, 'pid2');
    const params = { command: `echo $$ > ${pidFile2}; exec sleep 60`, requestKey: 'b' };
    await sendAndCut(daemon, 's', ShellRun.method, params, () => existsSync(pidFile2));
    const client = await daemon.session('s');
    const controller = new AbortController();
    const collected = client.call(
      ShellRun,
      { sessionId: 's', ...params },
      { signal: controller.signal },
    ) as Promise<ShellRunResult>;
    const pid2 = await readPid(pidFile2);
    // Past the grace while attached: still running.
    await new Promise((resolve) => setTimeout(resolve, graceMs + 500));
    expect(pidAlive(pid2)).toBe(true);
    const cancelledAt = Date.now();
    controller.abort();
    const result = await collected;
    console.log(`cancelled run answered ${Date.now() - cancelledAt} ms after the cancel`);
    expect(result.aborted).toBe(true);
    expect(pidAlive(pid2)).toBe(false);
  }, 90_000);

  it('with reconnectGraceMs 0 a keyed run of a dropped connection is aborted at once', async () => {
    const daemon = await startDaemon({ config: { reconnectGraceMs: 0 } });
    const pidFile = join(daemon.dir, 'pid');
    const raw = await rawAuthed(daemon.socketPath, daemon.stateDir);
    await raw.request(SessionOpen.method, { sessionId: 's', cwd: daemon.dir });
    raw.send({
      jsonrpc: '2.0',
      id: 1,
      method: ShellRun.method,
      params: { sessionId: 's', command: `echo $$ > ${pidFile}; exec sleep 60`, requestKey: 'z' },
    });
    const pid = await readPid(pidFile);
    raw.socket.end();
    await waitFor(() => !pidAlive(pid), 'the run to be aborted', { timeoutMs: 10_000 });
  });
});
