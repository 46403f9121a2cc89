/**
 * Network peers against the connection budget (issue 27, points 9 and 18): 300 silent TCP
 * connections to the TLS port do not keep a TLS client out past the handshake timeout, and
 * authenticated network clients cannot take the slots `localConnectionReserve` keeps for the
 * local socket.
 */
import { connect as netConnect, type Socket } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { connect } from '../../client/connect.js';
import type { ExecdClient } from '../../client/connection.js';
import { DEFAULT_CONFIG } from '../../protocol/config.js';
import { DaemonStatus } from '../../protocol/methods.js';
import { pem } from './pki.js';
import { startTlsDaemon, type TlsTestDaemon } from './loopback-tls.js';

function tlsClient(target: TlsTestDaemon): Promise<ExecdClient> {
  return connect(target.url, { ca: pem(target.ca.cert), token: target.token });
}

/** Opens `count` TCP connections that never send a byte; resolves once all connected or closed. */
async function silentFlood(port: number, count: number): Promise<Socket[]> {
  const sockets = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Socket>((resolve) => {
          const socket = netConnect({ host: '127.0.0.1', port });
          socket.on('error', () => {});
          socket.once('connect', () => resolve(socket));
          socket.once('close', () => resolve(socket));
        }),
    ),
  );
  onTestFinished(() => sockets.forEach((socket) => socket.destroy()));
  return sockets;
}

describe('network peers and the connection budget', () => {
  it('300 silent TCP connections to the TLS port: a TLS client still gets in within the handshake timeout', async () => {
    const target = await startTlsDaemon({ config: { handshakeTimeoutMs: 30_000 } });
    const flood = await silentFlood(target.port, 300);
    const started = performance.now();
    const client = await tlsClient(target);
    expect((await client.call(DaemonStatus, {})).pid).toBe(target.daemon.pid);
    const elapsed = performance.now() - started;
    client.close();
    const local = await target.daemon.connect();
    expect((await local.call(DaemonStatus, {})).pid).toBe(target.daemon.pid);
    const open = flood.filter((socket) => !socket.destroyed && socket.readyState === 'open').length;
    console.log(
      `300 silent connections (${open} still open): a TLS client was served in ${elapsed.toFixed(0)} ms (handshake timeout 30000 ms, maxPreAuthConnections ${DEFAULT_CONFIG.maxPreAuthConnections})`,
    );
    expect(elapsed).toBeLessThan(30_000);
  });

  it('authenticated network clients leave localConnectionReserve slots to the local socket', async () => {
    const target = await startTlsDaemon({ config: { maxConnections: 12, localConnectionReserve: 4 } });
    const attempts = await Promise.all(
      Array.from({ length: 12 }, () =>
        tlsClient(target)
          .then((client) => client.call(DaemonStatus, {}).then(() => client))
          .catch(() => undefined),
      ),
    );
    const remote = attempts.filter((client) => client !== undefined);
    onTestFinished(() => remote.forEach((client) => client.close()));
    const locals = await Promise.all(Array.from({ length: 4 }, () => target.daemon.connect()));
    for (const local of locals) expect((await local.call(DaemonStatus, {})).pid).toBe(target.daemon.pid);
    console.log(
      `maxConnections 12, localConnectionReserve 4: ${remote.length} of 12 TLS clients served, 4 of 4 local clients`,
    );
    expect(remote.length).toBe(8);
  });
});
