/**
 * A JSON-RPC connection that, once the daemon's side closes, rejects the calls still waiting — but
 * only after every message that arrived before the close was handled. vscode-jsonrpc queues
 * incoming messages and handles one per event-loop turn, so the daemon's last answer (e.g. to
 * `daemon/shutdown`) is often still queued when the close event fires; disposing at once would
 * drop it, and never disposing would leave the caller waiting forever.
 */
import type { Socket } from 'node:net';
import type { DataCallback, Disposable, Message, MessageConnection, MessageWriter } from 'vscode-jsonrpc/node.js';
import { frameMessage } from '../protocol/framing.js';
import { AbstractMessageWriter, createMessageConnection, SocketMessageReader } from '../protocol/jsonrpc.js';

/** Counts the messages it delivers to the connection's queue. */
class CountingReader extends SocketMessageReader {
  received = 0;

  constructor(socket: Socket) {
    super(socket);
    // The stock reader re-arms a timer every 10 s while a message is incomplete, and nothing
    // clears it: a connection cut in the middle of a message kept the process alive forever.
    // execd has no use for partial-message events.
    this.partialMessageTimeout = 0;
  }

  override listen(callback: DataCallback): Disposable {
    return super.listen((message) => {
      this.received += 1;
      callback(message);
    });
  }
}

/**
 * Writes each message with one socket write. (The stock socket writer queues every message behind
 * a promise and writes header and body separately.)
 */
class FramedSocketWriter extends AbstractMessageWriter implements MessageWriter {
  constructor(private readonly socket: Socket) {
    super();
    socket.on('error', (error) => this.fireError(error));
    socket.on('close', () => this.fireClose());
  }

  /**
   * A message for a socket already gone is dropped, not rejected: vscode-jsonrpc rethrows a failed
   * write from inside a promise executor, an unhandled rejection that can end the caller's
   * process. The socket's close, which follows, rejects the waiting call as lost (the client then
   * sends a keyed call again) rather than leaving it waiting.
   */
  write(message: Message): Promise<void> {
    if (!this.socket.destroyed && this.socket.writable) this.socket.write(frameMessage(message), 'utf8');
    return Promise.resolve();
  }

  end(): void {
    this.socket.end();
  }
}

/** Creates a listening connection over `socket` that disposes itself once closed and drained. */
export function createDrainingConnection(socket: Socket): MessageConnection {
  const reader = new CountingReader(socket);
  let handled = 0;
  let closed = false;
  const disposeIfDrained = () => {
    if (closed && handled >= reader.received) rpc.dispose();
  };
  const rpc = createMessageConnection(reader, new FramedSocketWriter(socket), {
    messageStrategy: {
      handleMessage(message, next) {
        try {
          next(message);
        } finally {
          handled += 1;
          disposeIfDrained();
        }
      },
    },
  });
  rpc.onClose(() => {
    closed = true;
    disposeIfDrained();
  });
  rpc.listen();
  return rpc;
}
