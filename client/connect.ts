/**
 * The library's `connect`: `connect(options)`, or `connect('tls://host:port', { ca, token })` (the
 * URL may also be given as `options.url`). With `autoStart`, a local daemon is started first when
 * none listens. It sits above both the connection and auto-start, so neither imports the other's caller.
 */
import { openConnection, type ConnectOptions, type ExecdClient } from './connection.js';
import { resolveEndpoint } from './endpoint.js';
import { assertKeepAliveMs } from './keep-alive.js';

/** Connects and authenticates, starting a local daemon first with `autoStart` when none listens. */
export async function connect(
  urlOrOptions: string | ConnectOptions = {},
  more: ConnectOptions = {},
): Promise<ExecdClient> {
  const options = typeof urlOrOptions === 'string' ? { ...more, url: urlOrOptions } : urlOrOptions;
  if (options.keepAliveMs !== undefined) assertKeepAliveMs(options.keepAliveMs);
  if (options.autoStart && options.url === undefined) {
    // Loaded only on this path: starting a daemon pulls in its lock and state-dir modules.
    const { connectOrStart } = await import('./autostart.js');
    return connectOrStart(resolveEndpoint(options), { ...options, autoStart: false });
  }
  return openConnection(options);
}
