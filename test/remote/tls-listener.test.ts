/** The TLS listener (SPEC §12): the same protocol, handshake and limits as the local socket. */
import { spawnSync } from 'node:child_process';
import { connect as netConnect } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { connect } from '../../client/connect.js';
import { type ExecdClient } from '../../client/connection.js';
import { DaemonStatus, JobRead, JobWait, SessionOpen, ShellStart } from '../../protocol/methods.js';
import { CLI } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';
import { pem } from './pki.js';
import { rawTls, startTlsDaemon, type TlsTestDaemon } from './loopback-tls.js';

async function tlsClient(target: TlsTestDaemon, options: { cert?: boolean } = {}): Promise<ExecdClient> {
  const client = await connect(target.url, {
    ca: pem(target.ca.cert),
    token: target.token,
    ...(options.cert ? { cert: pem(target.client.cert), key: pem(target.client.key) } : {}),
  });
  return client;
}

describe('tls:// listener', () => {
  it('serves the same protocol over TLS and the local socket at once', async () => {
    const target = await startTlsDaemon();
    const remote = await tlsClient(target);
    try {
      await remote.call(SessionOpen, { sessionId: 'r', cwd: target.daemon.dir });
      const chunks: string[] = [];
      const run = await remote.run(
        { sessionId: 'r', command: 'echo over; echo tls >&2' },
        { onOutput: (progress) => chunks.push(JSON.stringify(progress)) },
      );
      expect(run.stdout.text).toBe('over\n');
      expect(run.stderr.text).toBe('tls\n');
      expect(chunks.length).toBeGreaterThan(0);
      const { jobId } = await remote.call(ShellStart, { sessionId: 'r', command: 'seq 1 500' });
      await remote.call(JobWait, { sessionId: 'r', jobId });
      const read = await remote.call(JobRead, { sessionId: 'r', jobId });
      expect(read.delta).toBe(Array.from({ length: 500 }, (_, i) => `${i + 1}\n`).join(''));
      // The local socket serves alongside, and sees the session the remote client opened.
      const local = await target.daemon.connect();
      const status = await local.call(DaemonStatus, {});
      expect(status.sessions.map((session) => session.sessionId)).toContain('r');
      // Its status names the network listener it is reachable on.
      expect(status.listeners).toEqual([target.url]);
    } finally {
      remote.close();
    }
  });

  it('refuses a wrong token with UNAUTHORIZED over TLS', async () => {
    const target = await startTlsDaemon();
    await expect(connect(target.url, { ca: pem(target.ca.cert), token: 'f'.repeat(64) })).rejects.toMatchObject({
      errorName: 'UNAUTHORIZED',
    });
  });

  it('refuses a server certificate its CA did not sign, and a URL without a token', async () => {
    const target = await startTlsDaemon();
    // No `ca`: the system's CAs did not sign the throwaway certificate.
    await expect(connect(target.url, { token: target.token })).rejects.toMatchObject({
      name: 'ExecdConnectError',
      message: expect.stringMatching(/certificate/) as unknown,
    });
    const previous = process.env.EXECD_TOKEN;
    delete process.env.EXECD_TOKEN;
    try {
      await expect(connect(target.url, { ca: pem(target.ca.cert) })).rejects.toThrow(/needs a token/);
    } finally {
      if (previous !== undefined) process.env.EXECD_TOKEN = previous;
    }
  });

  it('with --tls-client-ca, serves only clients presenting a certificate it signed', async () => {
    const target = await startTlsDaemon({ clientCa: true });
    await expect(tlsClient(target)).rejects.toMatchObject({ name: 'ExecdConnectError' });
    const client = await tlsClient(target, { cert: true });
    try {
      expect((await client.call(DaemonStatus, {})).pid).toBe(target.daemon.pid);
    } finally {
      client.close();
    }
  });

  it('holds the pre-auth frame cap and the handshake timeout on TLS connections', async () => {
    const target = await startTlsDaemon({ config: { handshakeTimeoutMs: 500 } });
    const big = await rawTls(target);
    big.socket.write(`Content-Length: ${1024 * 1024}\r\n\r\n{"jsonrpc":"2.0"`);
    await big.closed;
    expect(big.messages[0]?.error).toMatchObject({ data: { code: 'LIMIT_EXCEEDED' } });
    expect(big.messages[0]?.error?.message).toMatch(/before initialize/);

    const silent = await rawTls(target);
    await silent.closed;
    expect(silent.messages[0]?.error).toMatchObject({ data: { code: 'UNAUTHORIZED' } });
    expect(silent.messages[0]?.error?.message).toMatch(/handshakeTimeoutMs/);

    // A peer that opens TCP but never starts TLS is dropped within handshakeTimeoutMs too.
    const plain = netConnect({ host: '127.0.0.1', port: target.port });
    plain.on('error', () => {});
    const closed = new Promise<void>((resolve) => plain.once('close', () => resolve()));
    const started = performance.now();
    await closed;
    console.log(`a peer without a TLS handshake was dropped after ${Math.round(performance.now() - started)} ms`);
  });

  it('counts TLS connections against maxConnections', async () => {
    const target = await startTlsDaemon({ config: { maxConnections: 2, localConnectionReserve: 0 } });
    const first = await tlsClient(target);
    const second = await tlsClient(target);
    try {
      // Refused before its TLS handshake costs anything: the socket is closed, the log says why.
      const third = await rawTls(target).catch(() => undefined);
      await third?.closed;
      expect(third?.messages ?? []).toEqual([]);
      await waitFor(
        () => target.daemon.stderr().includes('network connections at maxConnections less localConnectionReserve (2)'),
        'the refusal in the log',
      );
    } finally {
      first.close();
      second.close();
    }
  });

  it('holds at most maxPreAuthConnections peers in their TLS handshake: a newcomer evicts the oldest', async () => {
    const target = await startTlsDaemon({
      config: { maxPreAuthConnections: 2, maxPreAuthPerAddress: 2, handshakeTimeoutMs: 60_000 },
    });
    const plain = () => {
      const socket = netConnect({ host: '127.0.0.1', port: target.port });
      socket.on('error', () => {});
      onTestFinished(() => void socket.destroy());
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      const connected = new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      return { socket, closed, connected };
    };
    const first = plain();
    await first.connected;
    await waitFor(() => target.daemon.stderr().length > 0, 'the daemon log');
    const second = plain();
    await second.connected;
    // The third stranger takes the oldest one's slot (the accept queue is in order).
    const third = plain();
    await third.connected;
    await first.closed;
    await waitFor(() => /"msg":"connection evicted"/.test(target.daemon.stderr()), 'the eviction in the log');
    // A real client is served all the same: it evicts a stranger too.
    const client = await tlsClient(target);
    expect((await client.call(DaemonStatus, {})).pid).toBe(target.daemon.pid);
    client.close();
  });

  it('fails a pending call at once when the daemon dies', async () => {
    const target = await startTlsDaemon();
    const client = await tlsClient(target);
    await client.call(SessionOpen, { sessionId: 'p', cwd: target.daemon.dir });
    const pending = client.run({ sessionId: 'p', command: 'sleep 60' }).catch((error: Error) => error);
    const local = await target.daemon.connect();
    await waitFor(async () => (await local.call(DaemonStatus, {})).processes > 0, 'the run to start');
    await target.daemon.crash();
    const error = await pending;
    expect(error).toMatchObject({
      name: 'ExecdConnectError',
      message: expect.stringMatching(/connection to the daemon was lost/) as unknown,
    });
  });

  it('stops listening on TLS when it shuts down gracefully', async () => {
    const target = await startTlsDaemon();
    expect(await target.daemon.stop()).toBe(0);
    const refused = await connect(target.url, { ca: pem(target.ca.cert), token: target.token }).catch((e: Error) => e);
    expect(refused).toMatchObject({
      name: 'ExecdConnectError',
      message: expect.stringMatching(/ECONNREFUSED/) as unknown,
    });
  });
});

describe('execd serve --listen', () => {
  const serve = (args: string[]) =>
    spawnSync(process.execPath, [CLI, 'serve', '--socket', '/nonexistent/s.sock', ...args], { encoding: 'utf8' });

  it('refuses plain tcp:// on an address other than loopback, and tls:// without its material', () => {
    const tcp = serve(['--listen', 'tcp://0.0.0.0:7000']);
    expect(tcp.status).toBe(2);
    expect(tcp.stderr).toMatch(/plain tcp:\/\/ is allowed only on a loopback address/);
    const tls = serve(['--listen', 'tls://127.0.0.1:7000']);
    expect(tls.status).toBe(2);
    expect(tls.stderr).toMatch(/needs --tls-cert and --tls-key/);
    const bad = serve(['--listen', 'http://127.0.0.1:7000']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--listen must be tls:\/\/HOST:PORT/);
  });

  it('serves tcp:// on loopback', async () => {
    const target = await startTlsDaemon({ listen: ['tls://127.0.0.1:0', 'tcp://127.0.0.1:0'] });
    const tcpUrl = /"tcp:\/\/127\.0\.0\.1:\d+"/.exec(target.daemon.stderr())![0].slice(1, -1);
    const client = await connect(tcpUrl, { token: target.token });
    try {
      const status = await client.call(DaemonStatus, {});
      expect(status.pid).toBe(target.daemon.pid);
      expect(status.listeners).toEqual([target.url, tcpUrl]);
    } finally {
      client.close();
    }
  });
});
