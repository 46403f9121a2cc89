/**
 * Reaching the daemon from a client subcommand. With no daemon listening, the client starts one in
 * the background and waits for its socket (docs/cli.md; `ensure-daemon.ts`).
 *
 * The common case — a daemon is running — must start fast (docs/performance.md, B5): this module loads only
 * the client library; what starting a daemon takes is imported on that path alone.
 */
import { ExecdConnectError, openConnection, type ConnectOptions, type ExecdClient } from '../connection.js';
import type { Endpoint } from '../endpoint.js';
import { remoteConnectOptions } from './remote.js';

const CLI_OPTIONS: ConnectOptions = { clientName: 'execd-cli' };

/**
 * The options of the CLI's administrative commands (`status`, `stop`, `config`, `clean --all`,
 * `jobs --all`, `term list --all`): they send the admin token the local owner can read in the
 * state dir (or `EXECD_ADMIN_TOKEN` for a remote daemon).
 */
export const ADMIN_OPTIONS: ConnectOptions = { clientName: 'execd-cli', admin: true };

function connectCli(endpoint: Endpoint, options: ConnectOptions = CLI_OPTIONS): Promise<ExecdClient> {
  return openConnection({ ...options, ...endpoint, ...remoteConnectOptions() });
}

/**
 * Connects to the daemon, starting one first when none listens (`options`: those of `connect`) —
 * on the local socket only: a daemon named by `EXECD_URL` is never started here.
 */
export async function connectOrStart(endpoint: Endpoint, options: ConnectOptions = CLI_OPTIONS): Promise<ExecdClient> {
  if (process.env.EXECD_URL) return connectCli(endpoint, options);
  try {
    return await connectCli(endpoint, options);
  } catch (error) {
    if (!(error instanceof ExecdConnectError)) throw error;
  }
  const [{ socketIsLive }, { ensureDaemon }] = await Promise.all([
    import('../../shared/socket-probe.js'),
    import('./ensure-daemon.js'),
  ]);
  // Another client may have started one since: then this is a second try, else a start.
  if (!(await socketIsLive(endpoint.socketPath))) await ensureDaemon(endpoint);
  return connectCli(endpoint, options);
}

/** Connects to the daemon if one listens; undefined when none does. */
export async function connectIfRunning(
  endpoint: Endpoint,
  options: ConnectOptions = CLI_OPTIONS,
): Promise<ExecdClient | undefined> {
  if (process.env.EXECD_URL) return connectCli(endpoint, options);
  const { socketIsLive } = await import('../../shared/socket-probe.js');
  if (!(await socketIsLive(endpoint.socketPath))) return undefined;
  return connectCli(endpoint, options);
}

/** Connects (starting a daemon if needed), calls `use`, and closes the connection. */
export async function withClient<T>(
  endpoint: Endpoint,
  use: (client: ExecdClient) => Promise<T>,
  options: ConnectOptions = CLI_OPTIONS,
): Promise<T> {
  const client = await connectOrStart(endpoint, options);
  try {
    return await use(client);
  } finally {
    client.close();
  }
}
