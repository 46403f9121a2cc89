/**
 * Where and how a client opens its socket to a daemon (docs/deployment.md): a local socket path, or a URL —
 * `tls://HOST:PORT` (verified against `ca`, optionally presenting `cert`/`key`), `tcp://HOST:PORT`
 * (a daemon's loopback listener) or `unix:///path`.
 *
 * The reason a socket failed (a TLS alert such as a refused client certificate, a reset, a silent
 * peer cut off by the keep-alive) is remembered per socket, so the calls it fails can say why.
 */
import { connect as netConnect, isIP, type Socket } from 'node:net';

/** A daemon's address. */
export type DaemonAddress =
  { kind: 'unix'; path: string } | { kind: 'tls' | 'tcp'; host: string; port: number; url: string };

/** TLS material of a client, as PEM text or buffers (as Node's `tls.connect` takes them). */
export interface ClientTlsOptions {
  /** The CA that signed the daemon's certificate; default: the system's CAs. */
  ca?: string | Buffer;
  /** A client certificate and its key, for a daemon started with `--tls-client-ca`. */
  cert?: string | Buffer;
  key?: string | Buffer;
  /** The name the daemon's certificate must carry; default: the URL's host. */
  servername?: string;
}

/** How long opening a network socket (TCP and TLS handshake) may take by default. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/** Node's codes of a server certificate that failed verification (OpenSSL's, and the name check's). */
const CERTIFICATE_CODES = new Set([
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'INVALID_CA',
]);

/** True for a failed verification of the daemon's certificate (not a refused or reset connection). */
function isCertificateError(error: NodeJS.ErrnoException): boolean {
  return error.code !== undefined && CERTIFICATE_CODES.has(error.code);
}

/** Parses a daemon URL; returns a reason when it is not one. */
export function parseDaemonUrl(raw: string): DaemonAddress | string {
  const unix = /^unix:\/\/(\/.*)$/.exec(raw);
  if (unix) return { kind: 'unix', path: unix[1]! };
  const match = /^(tls|tcp):\/\/(\[[0-9a-fA-F:.]+\]|[^:/[\]]+):(\d{1,5})\/?$/.exec(raw);
  const port = Number(match?.[3]);
  if (!match || port < 1 || port > 65_535) {
    return `a daemon URL is tls://HOST:PORT, tcp://HOST:PORT or unix:///PATH, got ${JSON.stringify(raw)}`;
  }
  return { kind: match[1] as 'tls' | 'tcp', host: match[2]!.replace(/^\[(.*)\]$/, '$1'), port, url: raw };
}

/** A printable form of an address, for messages. */
export function describeAddress(address: DaemonAddress): string {
  return address.kind === 'unix' ? address.path : address.url;
}

const failures = new WeakMap<Socket, string>();

/** Why `socket` failed, when it did (the first error it saw). */
export function socketFailure(socket: Socket): string | undefined {
  return failures.get(socket);
}

/** Ends `socket` with `reason`, remembered for the calls it fails. */
export function failSocket(socket: Socket, reason: string): void {
  if (!failures.has(socket)) failures.set(socket, reason);
  socket.destroy();
}

/** A one-line reason; OpenSSL's multi-part messages are reduced to the alert the peer sent. */
export function describeSocketError(error: Error): string {
  const alert = /alert ([a-z ]+?)(?::|$)/.exec(error.message)?.[1];
  if (alert) return `the daemon refused the TLS session (alert: ${alert})`;
  return error.message.trim();
}

function remember(socket: Socket): void {
  socket.on('error', (error) => {
    if (!failures.has(socket)) failures.set(socket, describeSocketError(error));
  });
}

/**
 * Opens a socket to `address`; a network one is connected (and its TLS handshake done) within
 * `timeoutMs`. Rejects with a one-line reason.
 */
export async function openTransport(
  address: DaemonAddress,
  tlsOptions: ClientTlsOptions = {},
  timeoutMs = DEFAULT_CONNECT_TIMEOUT_MS,
): Promise<Socket> {
  const where = describeAddress(address);
  // Loaded only for a TLS URL: `node:tls` pulls in crypto, which a local CLI run never needs (B5).
  const tlsConnect = address.kind === 'tls' ? (await import('node:tls')).connect : undefined;
  return new Promise((resolve, reject) => {
    let socket: Socket;
    let ready = 'connect';
    if (address.kind === 'unix') socket = netConnect(address.path);
    else if (address.kind === 'tcp') socket = netConnect({ host: address.host, port: address.port });
    else {
      ready = 'secureConnect';
      socket = tlsConnect!({
        host: address.host,
        port: address.port,
        ca: tlsOptions.ca,
        cert: tlsOptions.cert,
        key: tlsOptions.key,
        // SNI takes host names only; the certificate is still checked against an IP address.
        servername: tlsOptions.servername ?? (isIP(address.host) ? undefined : address.host),
        minVersion: 'TLSv1.2',
      });
    }
    const timer =
      address.kind === 'unix'
        ? undefined
        : setTimeout(() => {
            socket.destroy();
            reject(new Error(`no execd daemon answered at ${where} within ${timeoutMs} ms`));
          }, timeoutMs);
    const failed = (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      // Something answered and showed a certificate: the daemon is there, this client distrusts it.
      if (isCertificateError(error)) {
        reject(
          new Error(
            `the daemon at ${where} presented a certificate this client does not trust: ${describeSocketError(error)} ` +
              '(is EXECD_CA the CA that signed it, and does it carry the name connected to?)',
          ),
        );
        return;
      }
      reject(new Error(`no execd daemon at ${where} (${describeSocketError(error)})`));
    };
    socket.once('error', failed);
    socket.once(ready, () => {
      clearTimeout(timer);
      socket.off('error', failed);
      socket.setNoDelay(true);
      remember(socket);
      resolve(socket);
    });
  });
}
