/**
 * Auto-start (docs/cli.md): connect to the local daemon, starting one in the background and waiting
 * for its socket when none listens. Used by the library's `connect({ autoStart: true })` and by
 * the CLI; its failures are `AutostartError`s, one line each.
 *
 * The common case — a daemon is running — must start fast (docs/performance.md, B5): this module loads only
 * the connection; what starting a daemon takes (`ensure-daemon.ts`) is imported on that path alone.
 */
import { ExecdConnectError, openConnection, type ConnectOptions, type ExecdClient } from './connection.js';
import type { Endpoint } from './endpoint.js';

export { AutostartError } from './autostart-error.js';

/**
 * Connects to the daemon at `endpoint`, starting one first when none listens — on the local
 * socket only: a daemon named by `options.url` is never started here.
 */
export async function connectOrStart(endpoint: Endpoint, options: ConnectOptions = {}): Promise<ExecdClient> {
  const open = () => openConnection({ ...options, ...endpoint });
  if (options.url !== undefined) return open();
  try {
    return await open();
  } catch (error) {
    if (!(error instanceof ExecdConnectError)) throw error;
  }
  const [{ socketIsLive }, { ensureDaemon }] = await Promise.all([
    import('../shared/socket-probe.js'),
    import('./ensure-daemon.js'),
  ]);
  // Another client may have started one since: then this is a second try, else a start.
  if (!(await socketIsLive(endpoint.socketPath))) await ensureDaemon(endpoint);
  return open();
}

/** Connects to the daemon at `endpoint` if one listens (or `options.url` names one); undefined when none does. */
export async function connectIfRunning(
  endpoint: Endpoint,
  options: ConnectOptions = {},
): Promise<ExecdClient | undefined> {
  const open = () => openConnection({ ...options, ...endpoint });
  if (options.url !== undefined) return open();
  const { socketIsLive } = await import('../shared/socket-probe.js');
  if (!(await socketIsLive(endpoint.socketPath))) return undefined;
  return open();
}
