/**
 * A daemon elsewhere, for the CLI (docs/deployment.md): `EXECD_URL` (`tls://HOST:PORT`, `tcp://HOST:PORT` or
 * `unix:///PATH`) with `EXECD_TOKEN`, and for TLS `EXECD_CA` (the CA file that signed the daemon's
 * certificate), `EXECD_CERT`/`EXECD_KEY` (a client certificate, for a daemon started with
 * `--tls-client-ca`; both or neither), `EXECD_SERVERNAME` (the name the daemon's certificate
 * carries, when the URL's host is not it), `EXECD_TOKEN_FILE` (the token in a file, when
 * `EXECD_TOKEN` is unset) and `EXECD_KEEPALIVE_MS`. A daemon reached by URL is never auto-started, and
 * its connection reconnects when it drops.
 */
import { readFileSync } from 'node:fs';
import type { ConnectOptions } from '../connection.js';
import { assertKeepAliveMs } from '../keep-alive.js';
import { CliError } from './errors.js';

function readPem(env: NodeJS.ProcessEnv, name: string): Buffer | undefined {
  const path = env[name];
  if (!path) return undefined;
  try {
    return readFileSync(path);
  } catch (error) {
    throw new CliError(`execd: cannot read ${name} ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
}

/** The token in `path` (`EXECD_TOKEN_FILE`), without its trailing newline. */
function readTokenFile(path: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch (error) {
    throw new CliError(
      `execd: cannot read EXECD_TOKEN_FILE ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
    );
  }
}

/** The connect options of `EXECD_URL` and its companions; undefined when `EXECD_URL` is unset. */
export function remoteConnectOptions(env: NodeJS.ProcessEnv = process.env): ConnectOptions | undefined {
  const url = env.EXECD_URL;
  if (!url) return undefined;
  const rawKeepAlive = env.EXECD_KEEPALIVE_MS;
  const keepAliveMs = rawKeepAlive ? Number(rawKeepAlive) : undefined;
  try {
    if (keepAliveMs !== undefined) assertKeepAliveMs(keepAliveMs);
  } catch {
    throw new CliError(
      `execd: EXECD_KEEPALIVE_MS must be a number of milliseconds from 100 to 2147483647, got ${JSON.stringify(rawKeepAlive)}`,
    );
  }
  // One without the other would be dropped and the daemon would refuse the handshake, unexplained.
  if (Boolean(env.EXECD_CERT) !== Boolean(env.EXECD_KEY)) {
    const [given, missing] = env.EXECD_CERT ? ['EXECD_CERT', 'EXECD_KEY'] : ['EXECD_KEY', 'EXECD_CERT'];
    throw new CliError(`execd: ${given} is set but ${missing} is not: a client certificate needs both files`);
  }
  return {
    url,
    ca: readPem(env, 'EXECD_CA'),
    cert: readPem(env, 'EXECD_CERT'),
    key: readPem(env, 'EXECD_KEY'),
    ...(env.EXECD_SERVERNAME && { servername: env.EXECD_SERVERNAME }),
    ...(!env.EXECD_TOKEN && env.EXECD_TOKEN_FILE && { token: readTokenFile(env.EXECD_TOKEN_FILE) }),
    keepAliveMs,
    // A remote link drops (NAT, sleep, rescheduling): keyed calls survive it (docs/reconnect.md).
    reconnect: true,
  };
}
