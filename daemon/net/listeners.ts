/**
 * Network listeners beside the local socket (docs/deployment.md): `tls://HOST:PORT` (Node's `tls`, optional
 * client certificates) and, on a loopback address only, plain `tcp://HOST:PORT`.
 *
 * A network listener hands its sockets to the same accept path as the local socket (server.ts), so
 * the framing, the token handshake and every limit of a connection are the same. What only a
 * network listener has is the TLS handshake before that: it must finish within the daemon's
 * `handshakeTimeoutMs` too, and a peer that fails it (wrong CA, no or wrong client certificate)
 * never reaches the accept path at all.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { createServer as createNetServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';
import type { Logger } from '../log/logger.js';
import type { NetworkAdmission } from './admission.js';

/** One `--listen` address. */
export interface ListenSpec {
  scheme: 'tls' | 'tcp';
  host: string;
  port: number;
}

/** Paths of the TLS material (`--tls-cert`, `--tls-key`, `--tls-client-ca`). */
export interface TlsFiles {
  cert?: string;
  key?: string;
  clientCa?: string;
}

/** True for an address on the loopback interface: 127.0.0.0/8, ::1, `localhost`. */
export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost' || host === '::1') return true;
  return isIP(host) === 4 && host.startsWith('127.');
}

/** `SCHEME://HOST:PORT` (IPv6 in brackets, an optional trailing `/`) split; undefined when it is not that shape. */
export function splitAddressUrl(raw: string): { scheme: string; host: string; port: number } | undefined {
  const match = /^([a-z]+):\/\/(\[[0-9a-fA-F:.]+\]|[^:/[\]]+):(\d{1,5})\/?$/.exec(raw);
  if (!match) return undefined;
  return { scheme: match[1]!, host: match[2]!.replace(/^\[(.*)\]$/, '$1'), port: Number(match[3]) };
}

/** Parses `tls://HOST:PORT` or `tcp://HOST:PORT` (IPv6 in brackets); returns a reason on refusal. */
export function parseListenUrl(raw: string): ListenSpec | string {
  const split = /\/$/.test(raw) ? undefined : splitAddressUrl(raw);
  if (!split || (split.scheme !== 'tls' && split.scheme !== 'tcp'))
    return `--listen must be tls://HOST:PORT or tcp://HOST:PORT, got ${JSON.stringify(raw)}`;
  const scheme = split.scheme;
  const { host, port } = split;
  if (port > 65_535) return `--listen port must be at most 65535, got ${port}`;
  if (scheme === 'tcp' && !isLoopbackHost(host)) {
    return `--listen ${raw}: plain tcp:// is allowed only on a loopback address (use tls:// for ${host})`;
  }
  return { scheme, host, port };
}

/**
 * Checks that the TLS flags fit the listeners; returns a reason on refusal. `metricsTls`: the
 * observability listener (`--metrics https://…`) serves TLS with the same certificate and key;
 * the client CA stays the `--listen` listeners' alone.
 */
export function checkTlsFiles(specs: readonly ListenSpec[], files: TlsFiles, metricsTls = false): string | undefined {
  const tls = specs.some((spec) => spec.scheme === 'tls');
  if (tls && (files.cert === undefined || files.key === undefined))
    return 'a tls:// listener needs --tls-cert and --tls-key';
  if (metricsTls && (files.cert === undefined || files.key === undefined))
    return '--metrics https:// (or tls://) needs --tls-cert and --tls-key';
  if (!tls && !metricsTls && (files.cert ?? files.key ?? files.clientCa) !== undefined)
    return '--tls-cert, --tls-key and --tls-client-ca apply only to a tls:// listener';
  if (!tls && files.clientCa !== undefined) return '--tls-client-ca applies only to a --listen tls:// listener';
  return undefined;
}

/** The address a listener is bound to, as a URL (the real port when 0 was asked for). */
export function listenerUrl(spec: ListenSpec, server: Server): string {
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : spec.port;
  const host = spec.host.includes(':') ? `[${spec.host}]` : spec.host;
  return `${spec.scheme}://${host}:${port}`;
}

/** The open network listeners. */
export interface NetworkListeners {
  /** Each listener's bound address (`tls://10.0.0.2:7000`). */
  urls: string[];
  /** The servers, in the order of their specs (an upgrade in place hands their descriptors over). */
  servers: Server[];
  /** Stops accepting; open connections are the caller's to close. */
  close(): void;
}

/** What the listeners need from the daemon, read at each use so `config/set` applies at once. */
export interface ListenerContext {
  log: Logger;
  handshakeTimeoutMs(): number;
  /** The pre-authentication budget and local reserve every network peer is admitted by. */
  admission: NetworkAdmission;
}

/** The daemon's connection made of an accepted socket (undefined: refused), as the admission needs it. */
export type AcceptConnection = (socket: Socket) => { readonly authed: boolean } | undefined;

/** Admits a raw network socket or destroys it; says what happened (aggregated by the logger). */
function admitted(raw: Socket, context: ListenerContext): boolean {
  const outcome = context.admission.admit(raw);
  if (!outcome.admitted) context.log.warn({ reason: outcome.reason }, 'connection refused');
  else if (outcome.evicted !== undefined)
    context.log.warn({ reason: 'pre-authentication budget full', remote: outcome.evicted }, 'connection evicted');
  return outcome.admitted;
}

/** Reads a TLS file; throws a one-line reason naming the flag when it cannot. */
export function readMaterial(path: string, what: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new Error(`cannot read ${what} ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, {
      cause: error,
    });
  }
}

/** A live TCP connection's identity, the same for the raw socket and the TLS socket over it. */
function peerKey(socket: Socket): string {
  return `${socket.remoteAddress}|${socket.remotePort}`;
}

function createListener(
  spec: ListenSpec,
  files: TlsFiles,
  context: ListenerContext,
  onConnection: AcceptConnection,
): Server {
  if (spec.scheme === 'tcp') {
    return createNetServer({ noDelay: true } as object, (socket) => {
      if (admitted(socket, context)) context.admission.attach(socket, onConnection(socket));
    });
  }
  const clientCa = files.clientCa === undefined ? undefined : readMaterial(files.clientCa, '--tls-client-ca');
  const server = createTlsServer(
    {
      cert: readMaterial(files.cert!, '--tls-cert'),
      key: readMaterial(files.key!, '--tls-key'),
      minVersion: 'TLSv1.2',
      // With a client CA, a peer without a certificate it signed fails the TLS handshake.
      ...(clientCa ? { ca: clientCa, requestCert: true, rejectUnauthorized: true } : {}),
      handshakeTimeout: context.handshakeTimeoutMs(),
      noDelay: true,
    },
    (socket: TLSSocket) => {
      const key = peerKey(socket);
      const raw = handshaking.get(key);
      handshaking.delete(key);
      const connection = onConnection(socket);
      if (raw) context.admission.attach(raw, connection);
    },
  );
  // Peers in their TLS handshake are strangers too: the admission budgets them from the first byte.
  const handshaking = new Map<string, Socket>();
  server.on('connection', (raw: Socket) => {
    if (!admitted(raw, context)) return;
    const key = peerKey(raw);
    handshaking.set(key, raw);
    raw.once('close', () => {
      if (handshaking.get(key) === raw) handshaking.delete(key);
    });
  });
  server.on('tlsClientError', (error, socket) => {
    // With a listener here Node leaves the socket open (a handshake timeout included): end it.
    context.log.warn({ reason: error.message, remote: socket.remoteAddress }, 'tls handshake refused');
    socket.destroy();
  });
  return server;
}

function listen(server: Server, spec: ListenSpec, fd: number | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) =>
      reject(new Error(`cannot listen on ${spec.scheme}://${spec.host}:${spec.port}: ${error.code ?? error.message}`));
    server.once('error', failed);
    const ready = () => {
      server.off('error', failed);
      // An accept error later (EMFILE…) must not bring the daemon down.
      server.on('error', (error) => void error);
      resolve();
    };
    // A listener an upgrade in place handed over is bound already.
    if (fd === undefined) server.listen(spec.port, spec.host, ready);
    else server.listen({ fd }, ready);
  });
}

/**
 * Opens every listener, all or none: rejects with a one-line reason (unreadable material, a port
 * in use) after closing the ones already open. `fds`, in the order of `specs`: descriptors an
 * upgrade in place handed over, listened on instead of binding.
 */
export async function openNetworkListeners(
  specs: readonly ListenSpec[],
  files: TlsFiles,
  context: ListenerContext,
  onConnection: AcceptConnection,
  fds: readonly number[] = [],
): Promise<NetworkListeners> {
  const refusal = checkTlsFiles(specs, files);
  if (refusal) throw new Error(refusal);
  const servers: Server[] = [];
  const urls: string[] = [];
  try {
    for (const [index, spec] of specs.entries()) {
      const server = createListener(spec, files, context, onConnection);
      servers.push(server);
      await listen(server, spec, fds[index]);
      urls.push(listenerUrl(spec, server));
    }
  } catch (error) {
    for (const server of servers) server.close();
    throw error;
  }
  return {
    urls,
    servers,
    close: () => {
      for (const server of servers) server.close();
    },
  };
}
