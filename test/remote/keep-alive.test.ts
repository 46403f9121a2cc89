/**
 * The client's keep-alive (client/keep-alive.ts): a daemon that falls silent — its host gone, no
 * reset sent — fails the pending calls within keepAliveMs; an idle but live one is kept.
 */
import { createServer, connect as netConnect, type Socket } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { connect } from '../../client/connect.js';
import { SessionOpen } from '../../protocol/methods.js';
import { startTlsDaemon } from './loopback-tls.js';
import { pem } from './pki.js';

/** A TCP relay to `port` that can be frozen: from then on it forwards nothing, either way. */
async function freezableRelay(port: number): Promise<{ port: number; freeze(): void }> {
  let frozen = false;
  const sockets: Socket[] = [];
  const server = createServer((inbound) => {
    const outbound = netConnect({ host: '127.0.0.1', port });
    sockets.push(inbound, outbound);
    for (const [from, to] of [
      [inbound, outbound],
      [outbound, inbound],
    ] as const) {
      from.on('data', (chunk) => {
        if (!frozen) to.write(chunk);
      });
      from.on('error', () => {});
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  const address = server.address();
  return { port: typeof address === 'object' && address ? address.port : 0, freeze: () => (frozen = true) };
}

describe('keepAliveMs', () => {
  it('fails a pending call within keepAliveMs when the daemon falls silent', async () => {
    const target = await startTlsDaemon();
    const relay = await freezableRelay(target.port);
    const keepAliveMs = 600;
    const client = await connect(`tls://127.0.0.1:${relay.port}`, {
      ca: pem(target.ca.cert),
      token: target.token,
      keepAliveMs,
    });
    onTestFinished(() => client.close());
    await client.call(SessionOpen, { sessionId: 'k', cwd: target.daemon.dir });
    const pending = client.run({ sessionId: 'k', command: 'sleep 60' }).catch((error: Error) => error);
    const frozenAt = performance.now();
    relay.freeze();
    const error = await pending;
    const afterMs = Math.round(performance.now() - frozenAt);
    console.log(`silent daemon noticed after ${afterMs} ms (keepAliveMs ${keepAliveMs})`);
    expect(error).toMatchObject({
      name: 'ExecdConnectError',
      message: expect.stringMatching(/keepAliveMs 600/) as unknown,
    });
    expect(client.isClosed).toBe(true);
  });

  it('keeps an idle, live connection open across many keep-alive periods', async () => {
    const target = await startTlsDaemon();
    // 500 ms gives each probe's round trip 250 ms (probe after 125 ms quiet, closed after 375 ms):
    // at 200 ms (50 ms) a busy 2-core machine could miss it once and close a live connection.
    const client = await connect(target.url, { ca: pem(target.ca.cert), token: target.token, keepAliveMs: 500 });
    onTestFinished(() => client.close());
    await client.call(SessionOpen, { sessionId: 'k', cwd: target.daemon.dir });
    // Three seconds (six periods) without a byte of output: only the probes' answers show the daemon is there.
    const result = await client.run({ sessionId: 'k', command: 'sleep 3; echo still' });
    expect(result.stdout.text).toBe('still\n');
  });

  it('refuses a keepAliveMs too small to work, before opening anything', async () => {
    await expect(connect('tls://127.0.0.1:1', { token: 'x', keepAliveMs: 5 })).rejects.toThrow(
      /keepAliveMs must be a number of milliseconds from 100 to 2147483647, got 5/,
    );
  });
});
