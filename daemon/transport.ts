/**
 * The daemon's side of a client socket: vscode-jsonrpc's `Content-Length` framing, with two bounds
 * its stock socket reader and writer do not have.
 *
 * - Reading: a `FrameGuard` sees every chunk before the reader does; a frame whose header or
 *   declared body passes its cap stops the stream there and the connection is closed, so an
 *   oversized message is never buffered.
 * - Writing: messages go straight to the socket (no per-message promise chain), and when the bytes
 *   the peer has not read yet pass `maxUnsentBytes` the connection is closed. A client that stops
 *   reading therefore costs bounded memory and never holds up anyone else.
 */
import type { Socket } from 'node:net';
import {
  AbstractMessageWriter,
  Disposable,
  ReadableStreamMessageReader,
  type Message,
  type MessageReader,
  type MessageWriter,
  type RAL,
} from 'vscode-jsonrpc/node.js';
import { frameMessage } from '../protocol/framing.js';
import { FrameGuard, type FrameViolation, type MessageCap } from './frame-guard.js';

/** The bounds of one connection, read at each use so that `config/set` applies at once. */
export interface TransportLimits {
  maxMessageBytes(): number | MessageCap;
  maxUnsentBytes(): number;
}

/**
 * Called once when the peer broke a bound; the connection must close. `UNREAD` is a peer that
 * stopped reading: nothing more can be sent to it.
 */
export type ViolationListener = (violation: FrameViolation | { code: 'UNREAD'; message: string }) => void;

/** Adapts a socket to vscode-jsonrpc's readable, passing data on only while the guard accepts it. */
function guardedReadable(socket: Socket, guard: FrameGuard, onViolation: ViolationListener): RAL.ReadableStream {
  let refused = false;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the listener type of socket.on(string, …) itself
  const on = (event: string, listener: (...args: any[]) => void) => {
    socket.on(event, listener);
    return Disposable.create(() => socket.off(event, listener));
  };
  return {
    onClose: (listener) => on('close', listener),
    onError: (listener) => on('error', listener),
    onEnd: (listener) => on('end', listener),
    onData: (listener) =>
      on('data', (chunk: Buffer) => {
        if (refused) return;
        const violation = guard.feed(chunk);
        if (violation === undefined) return listener(chunk);
        refused = true;
        onViolation(violation);
      }),
  };
}

/** A message reader over `socket` that refuses frames larger than `maxMessageBytes`. */
export function createGuardedReader(
  socket: Socket,
  limits: TransportLimits,
  onViolation: ViolationListener,
): MessageReader {
  const guard = new FrameGuard(() => limits.maxMessageBytes());
  return new ReadableStreamMessageReader(guardedReadable(socket, guard, onViolation));
}

/** Writes framed messages to a socket and reports a peer whose unread output passes the cap. */
export class BoundedSocketWriter extends AbstractMessageWriter implements MessageWriter {
  private overflowed = false;
  private afterWrite: (() => void) | undefined;

  constructor(
    private readonly socket: Socket,
    private readonly limits: TransportLimits,
    private readonly onViolation: ViolationListener,
  ) {
    super();
    socket.on('error', (error) => this.fireError(error));
    socket.on('close', () => this.fireClose());
  }

  /** Frames and queues one message; never waits for the peer. */
  write(message: Message): Promise<void> {
    if (this.overflowed || this.socket.destroyed || !this.socket.writable) return Promise.resolve();
    this.socket.write(frameMessage(message), 'utf8');
    const then = this.afterWrite;
    this.afterWrite = undefined;
    then?.();
    const unsent = this.socket.writableLength;
    const max = this.limits.maxUnsentBytes();
    if (unsent > max) {
      this.overflowed = true;
      this.onViolation({
        code: 'UNREAD',
        message: `the client left ${unsent} bytes unread, more than maxUnsentBytes (${max})`,
      });
    }
    return Promise.resolve();
  }

  /** Calls `listener` once the next message is queued (e.g. to hang up after a refusal). */
  afterNextWrite(listener: () => void): void {
    this.afterWrite = listener;
  }

  /** Ends the socket after what is queued has been flushed. */
  end(): void {
    this.socket.end();
  }
}
