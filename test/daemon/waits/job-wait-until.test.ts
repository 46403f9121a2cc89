/**
 * `job/wait` with `until` (SPEC §14): a real job opens a port, prints a line, creates a file; the
 * wait ends on the first and says which. A catastrophic pattern runs on the checker's thread under
 * its time bound, while another client's requests are answered as usual.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExecdRpcError } from '../../../client/connection.js';
import { ConfigGet, JobWait, ShellStart } from '../../../protocol/methods.js';
import { HELPER_IDLE_MS } from '../../../daemon/host/idle-release.js';
import { startDaemon } from '../../helpers/daemon.js';
import { waitFor } from '../../helpers/wait.js';

/** How many threads a process runs now. */
function threads(pid: number): number {
  return Number(/^Threads:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
}

/** A TCP port nothing listens on right now. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

describe('job/wait until', () => {
  it('port: answers within 100 ms of the port opening, endedBy port', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('w');
    const port = await freePort();
    const opened = join(daemon.dir, 'opened');
    const server = `require('net').createServer().listen(${port}, '127.0.0.1', () => require('fs').writeFileSync(${JSON.stringify(opened)}, String(Date.now())))`;
    const job = await client.call(ShellStart, {
      sessionId: 'w',
      command: `sleep 1; exec ${JSON.stringify(process.execPath)} -e ${JSON.stringify(server)}`,
    });
    const answer = await client.call(JobWait, { sessionId: 'w', jobId: job.jobId, timeoutMs: 30_000, until: { port } });
    const answeredAt = Date.now();
    // The server writes the file just after its port opened: the answer may come first.
    await waitFor(() => existsSync(opened), 'the server to record when its port opened');
    const openedAt = Number(readFileSync(opened, 'utf8'));
    console.log(`job/wait until port answered ${answeredAt - openedAt} ms after the port opened`);
    expect(answer).toMatchObject({ status: 'running', endedBy: 'port' });
    expect(answeredAt - openedAt).toBeLessThan(100);
  });

  it('output, path, settled and timeout each end the wait and are named', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('w');
    const start = (command: string) => client.call(ShellStart, { sessionId: 'w', command });
    const printer = await start('echo starting; sleep 0.3; echo "server ready on 8080"; sleep 30');
    const printed = await client.call(JobWait, {
      sessionId: 'w',
      jobId: printer.jobId,
      timeoutMs: 20_000,
      until: { output: 'ready on \\d+$' },
    });
    expect(printed).toMatchObject({ status: 'running', endedBy: 'output' });

    const toucher = await start('sleep 0.3; mkdir -p out && touch out/done; sleep 30');
    const touched = await client.call(JobWait, {
      sessionId: 'w',
      jobId: toucher.jobId,
      timeoutMs: 20_000,
      until: { path: 'out/done' },
    });
    expect(touched.endedBy).toBe('path');

    const quick = await start('echo nothing to see');
    const settled = await client.call(JobWait, { sessionId: 'w', jobId: quick.jobId, until: { output: 'never' } });
    expect(settled).toMatchObject({ status: 'completed', endedBy: 'settled' });

    const slow = await start('sleep 30');
    const timedOut = await client.call(JobWait, {
      sessionId: 'w',
      jobId: slow.jobId,
      timeoutMs: 300,
      until: { port: await freePort() },
    });
    expect(timedOut).toMatchObject({ status: 'running', endedBy: 'timeout' });
    const plain = await client.call(JobWait, { sessionId: 'w', jobId: quick.jobId });
    expect(plain.endedBy).toBe('settled');

    const bad = await client
      .call(JobWait, { sessionId: 'w', jobId: slow.jobId, until: { output: '(unclosed' } })
      .catch((error: unknown) => error);
    expect((bad as ExecdRpcError).message).toBe('until.output must be a valid JavaScript regular expression');
    const hidden = await client
      .call(JobWait, { sessionId: 'w', jobId: slow.jobId, until: { path: join(daemon.stateDir, 'token') } })
      .catch((error: unknown) => error);
    expect((hidden as ExecdRpcError).errorName).toBe('INVALID_PARAMS');
  });

  it('checks patterns on a thread that the first check starts and that ends HELPER_IDLE_MS after the last', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('w');
    // Whatever the daemon starts for any request (the libuv pool) is up before the count.
    await client.run({ sessionId: 'w', command: 'echo warm > warm.txt; cat warm.txt' });
    const idle = threads(daemon.pid);
    const printer = await client.call(ShellStart, { sessionId: 'w', command: 'echo "ready on 8080"; sleep 30' });
    const printed = await client.call(JobWait, {
      sessionId: 'w',
      jobId: printer.jobId,
      timeoutMs: 20_000,
      until: { output: 'ready on \\d+$' },
    });
    expect(printed.endedBy).toBe('output');
    expect(threads(daemon.pid)).toBe(idle + 1);
    await waitFor(() => threads(daemon.pid) === idle, 'the pattern thread to end', {
      timeoutMs: HELPER_IDLE_MS + 5_000,
    });
    // A later check starts a fresh one.
    const again = await client.call(JobWait, {
      sessionId: 'w',
      jobId: printer.jobId,
      timeoutMs: 20_000,
      until: { output: '8080' },
    });
    expect(again.endedBy).toBe('output');
  });

  it('a catastrophic pattern does not stall another client’s config/get and fails its own wait clearly', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('w');
    const other = await daemon.connect();
    // Warm: the first request of a method builds its schema; what is measured is the pattern's stall.
    await other.call(ConfigGet, {});
    const job = await client.call(ShellStart, { sessionId: 'w', command: `printf '${'a'.repeat(40)}x\\n'; sleep 30` });
    const started = Date.now();
    const waited = client
      .call(JobWait, { sessionId: 'w', jobId: job.jobId, timeoutMs: 20_000, until: { output: '^(a+)+$' } })
      .catch((error: unknown) => error);
    const state = { done: false };
    waited.then(
      () => (state.done = true),
      () => (state.done = true),
    );
    const latencies: number[] = [];
    while (!state.done || latencies.length < 20) {
      const asked = performance.now();
      await other.call(ConfigGet, {});
      latencies.push(performance.now() - asked);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const failure = await waited;
    const worst = Math.max(...latencies);
    console.log(`config/get latencies (ms): ${latencies.map((ms) => ms.toFixed(1)).join(' ')}`);
    console.log(
      `catastrophic pattern: wait failed after ${Date.now() - started} ms; ${latencies.length} config/get meanwhile, worst ${worst.toFixed(1)} ms`,
    );
    expect(failure).toBeInstanceOf(ExecdRpcError);
    expect((failure as ExecdRpcError).message).toMatch(/^until\.output: the pattern ran longer than 250 ms/);
    // Unbounded, this pattern runs for minutes on the event loop; 17.7–43.9 ms were measured on a
    // quiet machine (the 50 ms of the issue). The bound leaves room for a loaded CI machine.
    expect(worst).toBeLessThan(250);
    // The thread was replaced: a sane pattern works afterwards.
    const again = await client.call(JobWait, {
      sessionId: 'w',
      jobId: job.jobId,
      timeoutMs: 5_000,
      until: { output: 'x$' },
    });
    expect(again.endedBy).toBe('output');
  });

  it('port: the probe closes gracefully, so a server that writes first sees no reset', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('w');
    // A server that greets first (as SMTP or a database does) and records how each connection ended.
    const endings: string[] = [];
    const server = createServer((socket) => {
      socket.write('220 ready\r\n');
      // It goes on writing a little later (a second greeting line) before it reads.
      setTimeout(() => socket.write('220 still here\r\n'), 50);
      socket.on('error', (error: NodeJS.ErrnoException) => endings.push(error.code ?? error.message));
      socket.on('end', () => setTimeout(() => socket.end(), 100));
      socket.on('close', (hadError) => endings.push(hadError ? 'closed with an error' : 'closed'));
      socket.resume();
    });
    await new Promise<void>((resolveListen) => server.listen(0, '127.0.0.1', resolveListen));
    const { port } = server.address() as { port: number };
    const job = await client.call(ShellStart, { sessionId: 'w', command: 'sleep 30' });
    for (let probe = 0; probe < 5; probe++) {
      const answer = await client.call(JobWait, {
        sessionId: 'w',
        jobId: job.jobId,
        timeoutMs: 10_000,
        until: { port },
      });
      expect(answer.endedBy).toBe('port');
    }
    await waitFor(
      () => endings.filter((ending) => ending.startsWith('closed')).length >= 5,
      'every probe connection to close',
    );
    await new Promise<void>((resolveClose) => server.close(() => resolveClose()));
    console.log(`probe connections ended: ${endings.join(', ')}`);
    expect(endings).toEqual(Array<string>(5).fill('closed'));
  });
});
