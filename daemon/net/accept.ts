/**
 * The one accept path every listener (the private socket, each `--listen` address) hands its
 * sockets to: the same limits for all of them.
 */
import type { Socket } from 'node:net';
import type { Message } from 'vscode-jsonrpc';
import { ExecdError } from '../../protocol/errors.js';
import { frameMessage } from '../../protocol/framing.js';
import type { DaemonContext } from '../context.js';
import type { Logger } from '../log/logger.js';
import { ClientConnection, toResponseError } from './connection.js';
import type { HandlerEntry } from './handler.js';

/** How long a refused peer has to read its answer before its socket is destroyed. */
const REFUSED_CLOSE_MS = 1_000;

/**
 * Answers a connection the daemon will not serve with LIMIT_EXCEEDED (id null: no request was
 * read) and hangs up; the socket is destroyed soon even if the peer never reads.
 */
function refuseConnection(socket: Socket, message: string, log: Logger): void {
  log.warn({ reason: message }, 'connection refused');
  const error = toResponseError(new ExecdError('LIMIT_EXCEEDED', message)).toJson();
  socket.on('error', () => {});
  socket.end(frameMessage({ jsonrpc: '2.0', id: null, error } as Message));
  setTimeout(() => socket.destroy(), REFUSED_CLOSE_MS).unref();
}

/**
 * Makes the accept function of a daemon: a socket becomes a connection in `connections` unless the
 * daemon is shutting down or at `maxConnections`; a connection that closes detaches from its
 * sessions and aborts its foreground runs (its background jobs live on).
 */
export function acceptPath(
  context: DaemonContext,
  connections: Set<ClientConnection>,
  handlers: readonly HandlerEntry[],
): (socket: Socket) => ClientConnection | undefined {
  return (socket) => {
    if (context.shuttingDown) {
      socket.destroy();
      return undefined;
    }
    const maxConnections = context.config.get().maxConnections;
    if (connections.size >= maxConnections) {
      refuseConnection(socket, `maxConnections limit reached (${maxConnections})`, context.log);
      return undefined;
    }
    const conn = new ClientConnection(socket, context, handlers);
    connections.add(conn);
    conn.onClose(() => {
      connections.delete(conn);
      context.sessions.detach(conn);
      context.runs
        .abortWhere((run) => run.owner === conn)
        .catch((error: unknown) => context.log.error({ conn: conn.id, err: error }, 'aborting runs failed'));
    });
    return conn;
  };
}
