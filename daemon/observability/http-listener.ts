/**
 * The observability listener (`--metrics`, docs/observability.md): `GET /healthz`, `GET /readyz` and
 * `GET /metrics`, no token (they name no command, path or session), everything else 404.
 *
 * It is bounded apart from the client sockets, so a flood here never takes a slot or a byte from
 * them: at most `MAX_METRICS_CONNECTIONS` connections (Node drops the next ones at accept), request
 * headers of at most `MAX_HEADER_BYTES` (431 and closed), headers complete within
 * `HEADERS_TIMEOUT_MS` and the request within `REQUEST_TIMEOUT_MS` (408 and closed, checked every
 * `CHECK_INTERVAL_MS`), and a socket idle for `IDLE_TIMEOUT_MS` (a reader that stopped reading a
 * scrape) destroyed.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { readMaterial, type TlsFiles } from '../net/listeners.js';
import type { MetricsSpec } from './address.js';

/** Connections the listener holds at once; a probe and a scraper need one or two. */
export const MAX_METRICS_CONNECTIONS = 32;
/** Largest request head (request line and headers); a probe's is ~150 bytes. */
export const MAX_HEADER_BYTES = 8 * 1024;
/** A client must have sent its headers within this. */
export const HEADERS_TIMEOUT_MS = 5_000;
/** … and its whole request within this. */
export const REQUEST_TIMEOUT_MS = 10_000;
/** How often Node checks the two timeouts above. */
const CHECK_INTERVAL_MS = 1_000;
/** A connection with no traffic this long (a keep-alive left open, a stalled reader) is destroyed. */
export const IDLE_TIMEOUT_MS = 15_000;

/** What the three paths answer from. */
export interface ObservedState {
  /** Why the daemon is not ready (503 with it); undefined when it is. */
  notReady(): string | undefined;
  /** The Prometheus text and its content type. */
  metrics(): Promise<{ text: string; contentType: string }>;
}

/** The open listener. */
export interface ObservabilityListener {
  /** Its bound address, e.g. `http://127.0.0.1:9464`. */
  url: string;
  /** Stops accepting and ends every connection. */
  close(): void;
}

function answer(res: ServerResponse, status: number, body: string, contentType = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function handle(req: IncomingMessage, res: ServerResponse, state: ObservedState): void {
  // A body is never read: drain it so the connection can carry the next request.
  req.resume();
  const path = (req.url ?? '').split('?')[0];
  const known = req.method === 'GET' || req.method === 'HEAD';
  if (known && path === '/healthz') return answer(res, 200, 'ok\n');
  if (known && path === '/readyz') {
    const reason = state.notReady();
    return reason === undefined ? answer(res, 200, 'ready\n') : answer(res, 503, `not ready: ${reason}\n`);
  }
  if (known && path === '/metrics') {
    state.metrics().then(
      ({ text, contentType }) => answer(res, 200, text, contentType),
      (error: unknown) => answer(res, 500, `metrics failed: ${String(error)}\n`),
    );
    return;
  }
  answer(res, 404, 'not found\n');
}

function createListener(spec: MetricsSpec, tls: TlsFiles, state: ObservedState): Server {
  const options = {
    maxHeaderSize: MAX_HEADER_BYTES,
    headersTimeout: HEADERS_TIMEOUT_MS,
    requestTimeout: REQUEST_TIMEOUT_MS,
    connectionsCheckingInterval: CHECK_INTERVAL_MS,
    keepAliveTimeout: 5_000,
    noDelay: true,
  };
  const onRequest = (req: IncomingMessage, res: ServerResponse) => handle(req, res, state);
  const server = spec.tls
    ? createHttpsServer(
        {
          ...options,
          cert: readMaterial(tls.cert!, '--tls-cert'),
          key: readMaterial(tls.key!, '--tls-key'),
          minVersion: 'TLSv1.2',
          handshakeTimeout: HEADERS_TIMEOUT_MS,
        },
        onRequest,
      )
    : createHttpServer(options, onRequest);
  server.maxConnections = MAX_METRICS_CONNECTIONS;
  server.setTimeout(IDLE_TIMEOUT_MS, (socket: Socket) => socket.destroy());
  // A TLS peer that fails its handshake is ended (Node leaves the socket to its listener).
  server.on('tlsClientError', (_error: Error, socket: Socket) => socket.destroy());
  return server;
}

/** Opens the listener; rejects with a one-line reason (unreadable material, a port in use). */
export function openObservabilityListener(
  spec: MetricsSpec,
  tls: TlsFiles,
  state: ObservedState,
): Promise<ObservabilityListener> {
  const scheme = spec.tls ? 'https' : 'http';
  const host = spec.host.includes(':') ? `[${spec.host}]` : spec.host;
  const server = createListener(spec, tls, state);
  return new Promise((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) =>
      reject(new Error(`cannot listen on --metrics ${scheme}://${host}:${spec.port}: ${error.code ?? error.message}`));
    server.once('error', failed);
    server.listen(spec.port, spec.host, () => {
      server.off('error', failed);
      // An accept error later (EMFILE…) must not bring the daemon down.
      server.on('error', (error) => void error);
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : spec.port;
      resolve({
        url: `${scheme}://${host}:${port}`,
        close: () => {
          server.close();
          server.closeAllConnections();
        },
      });
    });
  });
}
