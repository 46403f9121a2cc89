/**
 * Reaching the daemon from a client subcommand: the library's auto-start (`../autostart.ts`) with
 * the CLI's client name, the remote daemon `EXECD_URL` names, and its failures as `CliError`s.
 */
import { AutostartError, connectIfRunning as probe, connectOrStart as start } from '../autostart.js';
import type { ConnectOptions, ExecdClient } from '../connection.js';
import type { Endpoint } from '../endpoint.js';
import { CliError } from './errors.js';
import { remoteConnectOptions } from './remote.js';

const CLI_OPTIONS: ConnectOptions = { clientName: 'execd-cli' };

/**
 * The options of the CLI's administrative commands (`status`, `stop`, `config`, `clean --all`,
 * `jobs --all`, `term list --all`): they send the admin token the local owner can read in the
 * state dir (or `EXECD_ADMIN_TOKEN` for a remote daemon).
 */
export const ADMIN_OPTIONS: ConnectOptions = { clientName: 'execd-cli', admin: true };

/** An auto-start failure as the CLI reports it: its one line, the execd error exit code. */
export function asCliError(error: unknown): unknown {
  return error instanceof AutostartError ? new CliError(error.message) : error;
}

/**
 * Connects to the daemon, starting one first when none listens (`options`: those of `connect`) —
 * on the local socket only: a daemon named by `EXECD_URL` is never started here.
 */
export async function connectOrStart(endpoint: Endpoint, options: ConnectOptions = CLI_OPTIONS): Promise<ExecdClient> {
  const remote = remoteConnectOptions();
  try {
    return await start(endpoint, { ...options, ...remote });
  } catch (error) {
    throw asCliError(error);
  }
}

/** Connects to the daemon if one listens; undefined when none does. */
export async function connectIfRunning(
  endpoint: Endpoint,
  options: ConnectOptions = CLI_OPTIONS,
): Promise<ExecdClient | undefined> {
  return await probe(endpoint, { ...options, ...remoteConnectOptions() });
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
