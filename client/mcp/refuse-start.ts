/**
 * What `execd mcp` does when it cannot serve (no daemon, a session it cannot open, a workdir that
 * does not exist): every request the MCP client has sent, or sends within a short grace, is answered
 * with a JSON-RPC error naming the failure, so an agent's `initialize` fails with execd's words
 * instead of waiting for an answer that never comes; then the server lets go of stdin and exits.
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { BoundedStdioTransport } from './stdio-transport.js';

/** JSON-RPC's internal-error code: the server failed, not the request. */
const INTERNAL_ERROR = -32603;

/**
 * How long a client that has not yet written its `initialize` is waited for. MCP clients send it
 * as soon as they spawn the server, so it is usually read at once; the bound keeps a silent client
 * from holding a failed server.
 */
const GRACE_MS = 1_000;

/** True for a message that expects an answer (a request, not a notification or a response). */
function isRequest(message: JSONRPCMessage): message is JSONRPCMessage & { id: string | number; method: string } {
  return 'method' in message && 'id' in message;
}

/**
 * Answers the requests pending on `transport` (or arriving within the grace) with `message` as an
 * internal error, then closes it. Resolves once the first answer is written, stdin ends, or the
 * grace has passed. Never rejects.
 */
export async function refuseStart(message: string, transport = new BoundedStdioTransport()): Promise<void> {
  await new Promise<void>((settle) => {
    const timer = setTimeout(settle, GRACE_MS);
    const finish = () => {
      clearTimeout(timer);
      process.stdin.off('end', finish);
      settle();
    };
    transport.onmessage = (incoming) => {
      if (!isRequest(incoming)) return;
      const answer: JSONRPCMessage = {
        jsonrpc: '2.0',
        id: incoming.id,
        error: { code: INTERNAL_ERROR, message },
      };
      transport.send(answer).then(finish, finish);
    };
    transport.onclose = finish;
    process.stdin.once('end', finish);
    transport.start().catch(finish);
  });
  await transport.close();
}
