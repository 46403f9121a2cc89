/**
 * The reconnecting client (SPEC §14) against real cuts: a proxy between the client and the
 * daemon's socket destroys the link while runs and jobs are in flight; the client re-dials,
 * re-opens its session, and re-sends its keyed calls. Every command appends a line to a file, so
 * a lost or doubled effect shows as a missing or repeated line.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { connect } from '../../client/connect.js';
import { ExecdConnectError, type ExecdClient } from '../../client/connection.js';
import { JobRead, JobWait, SessionOpen, ShellStart } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';
import { startCutProxy } from './cut-proxy.js';

/** Calls `use` again while the link is down: a read without a key fails fast, and reading again is safe. */
async function retryRead<T>(use: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await use();
    } catch (error) {
      if (!(error instanceof ExecdConnectError)) throw error;
    }
  }
}

describe('connect({ reconnect: true })', () => {
  it('survives 20 cuts in a row during a workload of runs and jobs, with no lost and no doubled effect', async () => {
    const daemon = await startDaemon();
    const proxy = await startCutProxy(daemon.dir, daemon.socketPath);
    const log = join(daemon.dir, 'effects');
    const client: ExecdClient = await connect({
      socketPath: proxy.path,
      stateDir: daemon.stateDir,
      reconnect: { initialDelayMs: 20, maxDelayMs: 200 },
    });
    let reconnects = 0;
    client.onReconnected(() => (reconnects += 1));
    await client.call(SessionOpen, { sessionId: 'w', cwd: daemon.dir });

    const expected: string[] = [];
    const state = { stop: false };
    const workload = (async () => {
      for (let i = 0; !state.stop || i < 4; i++) {
        const run = `run-${i}`;
        expected.push(run);
        const result = await client.run({ sessionId: 'w', command: `echo ${run} >> ${log}; sleep 0.15; echo ${run}` });
        expect(result.stdout.text).toBe(`${run}\n`);
        const job = `job-${i}`;
        expected.push(job);
        const started = await client.call(ShellStart, { sessionId: 'w', command: `echo ${job} >> ${log}; sleep 0.1` });
        const settled = await retryRead(() =>
          client.call(JobWait, { sessionId: 'w', jobId: started.jobId, timeoutMs: 10_000 }),
        );
        expect(settled.status).toBe('completed');
      }
    })();

    const cuts: number[] = [];
    for (let cut = 0; cut < 20; cut++) {
      // Wait for the link to be back (a cut of nothing would prove nothing), then cut mid-flight.
      await waitFor(() => reconnects >= cut, `link ${cut + 1} to be up (reconnected and re-opened)`);
      await new Promise((resolve) => setTimeout(resolve, 150 + Math.random() * 250));
      cuts.push(proxy.cut());
    }
    state.stop = true;
    await workload;
    const effects = readFileSync(log, 'utf8').split('\n').filter(Boolean);
    const doubled = effects.filter((line, at) => effects.indexOf(line) !== at);
    const lost = expected.filter((line) => !effects.includes(line));
    console.log(
      `cuts: ${cuts.length} (links cut: ${cuts.reduce((a, b) => a + b, 0)}), reconnects: ${reconnects}, effects: ${effects.length} of ${expected.length} expected, lost: ${lost.length}, doubled: ${doubled.length}`,
    );
    expect(lost).toEqual([]);
    expect(doubled).toEqual([]);
    expect(effects).toHaveLength(expected.length);
    expect(reconnects).toBeGreaterThanOrEqual(20);
  }, 180_000);

  it('fails an unkeyed call in flight with a clear error, and gives up after maxAttempts when the daemon is gone', async () => {
    const daemon = await startDaemon();
    const proxy = await startCutProxy(daemon.dir, daemon.socketPath);
    const client = await connect({
      socketPath: proxy.path,
      stateDir: daemon.stateDir,
      reconnect: { maxAttempts: 3, initialDelayMs: 20, maxDelayMs: 50 },
    });
    await client.call(SessionOpen, { sessionId: 'u', cwd: daemon.dir });
    const job = await client.call(ShellStart, { sessionId: 'u', command: 'sleep 30' });
    const read = client
      .call(JobRead, { sessionId: 'u', jobId: job.jobId, waitMs: 10_000 })
      .catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 200));
    proxy.cut();
    const failure = await read;
    expect(failure).toBeInstanceOf(ExecdConnectError);
    expect((failure as Error).message).toMatch(
      /lost before it answered job\/read.*no requestKey, so it was not sent again/,
    );
    // After the reconnect the session is open again: an unkeyed call goes through.
    await waitFor(() => proxy.accepted() >= 2, 'the reconnect');
    const again = await client.call(JobWait, { sessionId: 'u', jobId: job.jobId, timeoutMs: 10 });
    expect(again.status).toBe('running');

    let closed = false;
    client.onClose(() => (closed = true));
    await proxy.close();
    const started = Date.now();
    await waitFor(() => closed, 'the client to give up');
    console.log(`gave up ${Date.now() - started} ms after the daemon became unreachable (maxAttempts 3)`);
    const gone = await client
      .call(JobWait, { sessionId: 'u', jobId: job.jobId, timeoutMs: 10 })
      .catch((error: unknown) => error);
    expect(gone).toBeInstanceOf(ExecdConnectError);
    expect(client.isClosed).toBe(true);
  }, 60_000);
});
