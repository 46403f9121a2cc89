/** A test daemon with a TLS listener on loopback, and raw TLS sockets to it. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { onTestFinished } from 'vitest';
import { startDaemon, type TestDaemon, type TestDaemonOptions } from '../helpers/daemon.js';
import type { RawMessage } from '../helpers/raw.js';
import { makeCa, makeCert, pem, type CaFiles, type CertFiles } from './pki.js';

/** A daemon listening on its socket and on `tls://127.0.0.1:<port>`. */
export interface TlsTestDaemon {
  daemon: TestDaemon;
  url: string;
  port: number;
  token: string;
  ca: CaFiles;
  /** A client certificate signed by the client CA (used when `clientCa` was asked for). */
  client: CertFiles;
  pkiDir: string;
}

/** Starts a daemon with a TLS listener on an ephemeral loopback port. */
export async function startTlsDaemon(
  options: TestDaemonOptions & { clientCa?: boolean; listen?: string[] } = {},
): Promise<TlsTestDaemon> {
  const pkiDir = mkdtempSync(join(tmpdir(), 'execd-pki-'));
  onTestFinished(() => rmSync(pkiDir, { recursive: true, force: true }));
  const ca = makeCa(pkiDir, 'ca');
  const server = makeCert(pkiDir, ca, 'server', ['127.0.0.1']);
  const clientCa = makeCa(pkiDir, 'client-ca');
  const client = makeCert(pkiDir, clientCa, 'client');
  const listen = (options.listen ?? ['tls://127.0.0.1:0']).flatMap((url) => ['--listen', url]);
  const daemon = await startDaemon({
    ...options,
    extraArgs: [
      ...(options.extraArgs ?? []),
      ...listen,
      '--tls-cert',
      server.cert,
      '--tls-key',
      server.key,
      ...(options.clientCa ? ['--tls-client-ca', clientCa.cert] : []),
    ],
  });
  const url = /"listen":\["(tls:\/\/127\.0\.0\.1:\d+)"/.exec(daemon.stderr())![1]!;
  const token = readFileSync(join(daemon.stateDir, 'token'), 'utf8').trim();
  return { daemon, url, port: Number(url.split(':').pop()), token, ca, client, pkiDir };
}

/** A raw TLS socket that collects what the daemon sends and notices the close. */
export interface RawTls {
  socket: TLSSocket;
  /** Every complete JSON-RPC message received. */
  messages: RawMessage[];
  closed: Promise<void>;
  send(message: unknown): void;
}

/** Opens a raw TLS socket to a test daemon (destroyed when the test finishes). */
export function rawTls(target: TlsTestDaemon): Promise<RawTls> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port: target.port, ca: pem(target.ca.cert) });
    onTestFinished(() => void socket.destroy());
    let buffer = Buffer.alloc(0);
    const messages: RawTls['messages'] = [];
    const closed = new Promise<void>((done) => socket.once('close', () => done()));
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) return;
        const length = Number(/Content-Length: (\d+)/i.exec(buffer.subarray(0, end).toString())?.[1]);
        if (buffer.length < end + 4 + length) return;
        messages.push(JSON.parse(buffer.subarray(end + 4, end + 4 + length).toString()) as RawMessage);
        buffer = buffer.subarray(end + 4 + length);
      }
    });
    socket.on('error', () => {});
    socket.once('secureConnect', () =>
      resolve({
        socket,
        messages,
        closed,
        send: (message) => {
          const body = JSON.stringify(message);
          socket.write(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
        },
      }),
    );
    socket.once('error', reject);
  });
}
