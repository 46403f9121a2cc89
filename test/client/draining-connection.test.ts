/**
 * The client's JSON-RPC connection (client/draining-connection.ts) when a call is made on a socket
 * already destroyed but not yet closed: the call is rejected as lost once the close arrives, and
 * nothing becomes an unhandled rejection (which would end a harness's process).
 */
import { createServer, connect as netConnect, type Socket } from 'node:net';
import { once } from 'node:events';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ResponseError } from 'vscode-jsonrpc/node.js';
import { createDrainingConnection } from '../../client/draining-connection.js';

describe('draining connection', () => {
  it('a call on a socket destroyed a moment ago is rejected as lost, with no unhandled rejection', async () => {
    const server = createServer((peer) => peer.on('error', () => {}));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    onTestFinished(() => {
      server.close();
    });
    const socket: Socket = netConnect((server.address() as { port: number }).port, '127.0.0.1');
    await once(socket, 'connect');
    const rpc = createDrainingConnection(socket);
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    onTestFinished(() => {
      process.off('unhandledRejection', onUnhandled);
    });

    // Destroyed now, its close event comes a tick later: the call falls in between.
    socket.destroy();
    const call = rpc.sendRequest('session/list', {});
    const error: unknown = await call.then(
      () => undefined,
      (reason: unknown) => reason,
    );
    // Give a stray rejection the turns it needs to be reported.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(error).toBeInstanceOf(ResponseError);
    // Lost with the connection (PendingResponseRejected), not a failed write the caller cannot retry.
    expect((error as ResponseError<unknown>).code).toBe(-32097);
    expect(unhandled).toEqual([]);
  });
});
