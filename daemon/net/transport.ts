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
 * - Flow control: streamed output (`$/progress`) is produced only while the unsent bytes are below
 *   a high-water mark: the writer is the `OutputFlow` of the connection's streamed runs, which
 *   stop reading their command's pipes while it is blocked and resume once the socket has drained.
 *   A client that reads slowly therefore slows the command instead of being dropped; one that
 *   reads nothing for `unreadTimeoutMs` while output waits for it is dropped.
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
import { frameMessage } from '../../protocol/framing.js';
import { FrameGuard, type FrameViolation, type MessageCap } from './frame-guard.js';
import { readPreamble, type PreambleVerdict } from './stream-preamble.js';

/** The bounds of one connection, read at each use so that `config/set` applies at once. */
export interface TransportLimits {
  maxMessageBytes(): number | MessageCap;
  maxUnsentBytes(): number;
  /** How long queued output may wait with nothing of it read before the peer is dropped. */
  unreadTimeoutMs(): number;
}

/** Unsent bytes past which streamed runs stop reading their commands (at most half of `maxUnsentBytes`). */
export const FLOW_HIGH_WATER_BYTES = 1024 * 1024;

/** How often a blocked connection is checked for a peer that reads nothing. */
const STALL_CHECK_MS = 250;

/**
 * Called once when the peer broke a bound; the connection must close. `UNREAD` is a peer that
 * stopped reading: nothing more can be sent to it.
 */
export type ViolationListener = (violation: FrameViolation | { code: 'UNREAD'; message: string }) => void;

/**
 * Called once when a connection's first bytes are a transfer stream's preamble (or a broken one):
 * from then on the JSON-RPC reader sees nothing of the socket, which is paused for the taker.
 */
export type StreamListener = (verdict: Extract<PreambleVerdict, { kind: 'stream' | 'bad' }>) => void;

/** Adapts a socket to vscode-jsonrpc's readable, passing data on only while the guard accepts it. */
function guardedReadable(
  socket: Socket,
  guard: FrameGuard,
  onViolation: ViolationListener,
  onStream: StreamListener,
): RAL.ReadableStream {
  let refused = false;
  /** The first bytes, until they tell JSON-RPC from a transfer stream. */
  let sniffed: Buffer | undefined = Buffer.alloc(0);
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
      on('data', (data: Buffer) => {
        if (refused) return;
        let chunk = data;
        if (sniffed !== undefined) {
          chunk = Buffer.concat([sniffed, data]);
          const verdict = readPreamble(chunk);
          if (verdict.kind === 'more') {
            sniffed = chunk;
            return;
          }
          sniffed = undefined;
          if (verdict.kind !== 'rpc') {
            refused = true;
            socket.pause();
            return onStream(verdict);
          }
        }
        const violation = guard.feed(chunk);
        if (violation === undefined) return listener(chunk);
        refused = true;
        onViolation(violation);
      }),
  };
}

/**
 * A message reader over `socket` that refuses frames larger than `maxMessageBytes`, and hands the
 * socket to `onStream` when it turns out to be a transfer stream.
 */
export function createGuardedReader(
  socket: Socket,
  limits: TransportLimits,
  onViolation: ViolationListener,
  onStream: StreamListener,
): MessageReader {
  const guard = new FrameGuard(() => limits.maxMessageBytes());
  const reader = new ReadableStreamMessageReader(guardedReadable(socket, guard, onViolation, onStream));
  // Its partial-message timer re-arms every 10 s while a frame is incomplete and is never
  // cleared: each connection dropped mid-frame would keep one alive for good.
  reader.partialMessageTimeout = 0;
  return reader;
}

/**
 * Writes framed messages to a socket and reports a peer whose unread output passes the cap; the
 * back-pressure (`OutputFlow`) of the connection's streamed runs.
 */
export class BoundedSocketWriter extends AbstractMessageWriter implements MessageWriter {
  private overflowed = false;
  private afterWrite: (() => void) | undefined;
  /** Streamed runs waiting for the socket to drain. */
  private waiting: Array<() => void> = [];
  /** When a byte last reached the peer's side (a write completed). */
  private lastFlushAt = Date.now();
  private stallTimer: NodeJS.Timeout | undefined;
  private readonly flushed = () => (this.lastFlushAt = Date.now());

  constructor(
    private readonly socket: Socket,
    private readonly limits: TransportLimits,
    private readonly onViolation: ViolationListener,
  ) {
    super();
    socket.on('error', (error) => this.fireError(error));
    socket.on('close', () => {
      this.release();
      this.fireClose();
    });
    socket.on('drain', () => this.release());
  }

  /** Frames and queues one message; never waits for the peer. */
  write(message: Message): Promise<void> {
    if (this.overflowed || this.socket.destroyed || !this.socket.writable) return Promise.resolve();
    this.socket.write(frameMessage(message), 'utf8', this.flushed);
    const then = this.afterWrite;
    this.afterWrite = undefined;
    then?.();
    const unsent = this.socket.writableLength;
    const max = this.limits.maxUnsentBytes();
    if (unsent > max) {
      this.violate(`the client left ${unsent} bytes unread, more than maxUnsentBytes (${max})`);
    } else if (this.blocked && this.stallTimer === undefined) {
      // The unread time counts from now: an idle connection has flushed nothing for a while.
      this.lastFlushAt = Date.now();
      this.stallTimer = setInterval(() => this.checkStall(), STALL_CHECK_MS).unref();
    }
    return Promise.resolve();
  }

  /** True while the peer has more unsent than the high-water mark: streamed runs pause. */
  get blocked(): boolean {
    const highWater = Math.min(FLOW_HIGH_WATER_BYTES, Math.floor(this.limits.maxUnsentBytes() / 2));
    return !this.socket.destroyed && this.socket.writableLength > highWater;
  }

  /** Calls `listener` once the socket has drained (or closed). */
  whenOpen(listener: () => void): void {
    if (this.blocked) this.waiting.push(listener);
    else listener();
  }

  /** The socket drained or closed: every paused run reads again. */
  private release(): void {
    clearInterval(this.stallTimer);
    this.stallTimer = undefined;
    for (const listener of this.waiting.splice(0)) listener();
  }

  /** Drops a peer that has read nothing for `unreadTimeoutMs` while output waits for it. */
  private checkStall(): void {
    if (!this.blocked) {
      this.release();
      return;
    }
    const timeout = this.limits.unreadTimeoutMs();
    if (Date.now() - this.lastFlushAt <= timeout) return;
    this.violate(
      `the client left ${this.socket.writableLength} bytes unread for more than unreadTimeoutMs (${timeout})`,
    );
  }

  private violate(message: string): void {
    if (this.overflowed) return;
    this.overflowed = true;
    clearInterval(this.stallTimer);
    this.stallTimer = undefined;
    this.onViolation({ code: 'UNREAD', message });
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
