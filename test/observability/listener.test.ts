/**
 * The observability listener (`serve --metrics`, SPEC §18) of a real daemon: `/healthz` at once,
 * `/readyz` 503 with its reason until the daemon answers on its socket and its sandbox probe has
 * answered, and again during shutdown; 404 for anything else; and its bounds (header size, slow
 * clients, connections) hold without costing a socket client anything.
 */
import { chmodSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { MAX_METRICS_CONNECTIONS } from '../../daemon/observability/http-listener.js';
import { JobWait, ShellRun, ShellStart } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';
import { freePort, startObservedDaemon } from './helpers.js';

/** A GET's status and body; undefined when nothing listens. */
async function get(url: string): Promise<{ status: number; body: string } | undefined> {
  try {
    const response = await fetch(url);
    return { status: response.status, body: await response.text() };
  } catch {
    return undefined;
  }
}

/** A raw TCP connection to the listener. */
interface RawHttp {
  socket: Socket;
  /** What the listener sent so far. */
  received(): string;
  /** Resolves when the connection is closed. */
  gone: Promise<void>;
  isGone(): boolean;
}

/** Connects to the listener; resolves once connected. */
function rawConnection(port: number): Promise<RawHttp> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    let over = false;
    socket.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
    const gone = new Promise<void>((done) =>
      socket.once('close', () => {
        over = true;
        done();
      }),
    );
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.off('error', reject);
      socket.on('error', () => {});
      resolve({ socket, received: () => text, gone, isGone: () => over });
    });
  });
}

describe('observability listener', { timeout: 120_000 }, () => {
  it('answers /readyz 503 until the sandbox probe has answered, /healthz 200 at once, then ready', async () => {
    // A bubblewrap whose probe takes 3 s (Linux with bwrap on PATH, as the sandbox suites): the
    // daemon starts, and is not ready, for that long.
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const slowBwrap = join(process.env.TMPDIR ?? '/tmp', `execd-slow-bwrap-${process.pid}-${port}`);
    writeFileSync(slowBwrap, '#!/bin/sh\nsleep 3\nexec bwrap "$@"\n');
    chmodSync(slowBwrap, 0o755);
    onTestFinished(() => rmSync(slowBwrap, { force: true }));
    const starting = startDaemon({
      env: { EXECD_BWRAP: slowBwrap },
      config: { sandboxBackend: 'bwrap' },
      extraArgs: ['--metrics', base],
    });
    const early = await waitFor(() => get(`${base}/readyz`), 'the listener to answer', { timeoutMs: 60_000 });
    expect(early).toEqual({ status: 503, body: 'not ready: starting: the daemon does not answer on its socket yet\n' });
    expect(await get(`${base}/healthz`)).toEqual({ status: 200, body: 'ok\n' });
    const daemon = await starting;
    expect(await get(`${base}/readyz`)).toEqual({ status: 200, body: 'ready\n' });
    const client = await daemon.session('ready');
    expect(await client.call(ShellRun, { sessionId: 'ready', command: 'echo up' })).toMatchObject({ exitCode: 0 });
  });

  it('answers /readyz 503 shutting down while the daemon shuts down, then closes', async () => {
    const { daemon, base } = await startObservedDaemon({ config: { graceMs: 4_000 } });
    const client = await daemon.session('stopping');
    // A job that ignores SIGTERM holds the shutdown for graceMs.
    const { jobId } = await client.call(ShellStart, {
      sessionId: 'stopping',
      command: "trap '' TERM; echo trapped; sleep 60",
    });
    await client.call(JobWait, { sessionId: 'stopping', jobId, until: { output: '^trapped$' } });
    expect((await get(`${base}/readyz`))?.status).toBe(200);
    const stopped = daemon.stop();
    const during = await waitFor(async () => {
      const answer = await get(`${base}/readyz`);
      return answer?.status === 503 ? answer : undefined;
    }, '/readyz to say 503');
    expect(during.body).toBe('not ready: shutting down\n');
    expect((await get(`${base}/healthz`))?.status).toBe(200);
    await stopped;
    expect(await get(`${base}/readyz`)).toBeUndefined();
  });

  it('serves only its three paths: anything else is 404', async () => {
    const { base } = await startObservedDaemon();
    expect((await get(`${base}/`))?.status).toBe(404);
    expect((await get(`${base}/metrics/x`))?.status).toBe(404);
    expect((await get(`${base}/healthz?verbose=1`))?.status).toBe(200);
    expect((await fetch(`${base}/metrics`, { method: 'POST', body: 'x' })).status).toBe(404);
  });

  it('refuses oversize headers, drops slow clients and extra connections; a socket client runs on', async () => {
    const { daemon, base } = await startObservedDaemon();
    const port = Number(new URL(base).port);
    const client = await daemon.session('bounded');
    const run = async () =>
      expect(await client.call(ShellRun, { sessionId: 'bounded', command: 'echo fine' })).toMatchObject({
        exitCode: 0,
        stdout: { text: 'fine\n' },
      });

    // 16 KiB of headers: 431, and the connection is closed.
    const big = await rawConnection(port);
    big.socket.write(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(16 * 1024)}\r\n\r\n`);
    await big.gone;
    expect(big.received()).toMatch(/^HTTP\/1\.1 431 /);
    await run();

    // A client that never finishes its headers is answered 408 and dropped.
    const slow = await rawConnection(port);
    slow.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    const slowStart = Date.now();
    // Meanwhile the socket client is served as usual.
    await run();
    await slow.gone;
    const slowMs = Date.now() - slowStart;
    expect(slow.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(slowMs).toBeLessThan(15_000);

    // Past MAX_METRICS_CONNECTIONS, connections are closed at accept.
    const held = await Promise.all(Array.from({ length: MAX_METRICS_CONNECTIONS + 8 }, () => rawConnection(port)));
    await waitFor(() => held.filter((raw) => raw.isGone()).length >= 8, 'the extra connections to be closed');
    await run();
    for (const raw of held) raw.socket.destroy();
    // Once they are gone, probes get in again.
    await waitFor(async () => (await get(`${base}/healthz`))?.status === 200, '/healthz after the flood');
  });
});
