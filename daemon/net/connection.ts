/**
 * One client connection: the JSON-RPC framing over its socket, the token gate, params validation
 * at the boundary, and the sessions it has open.
 *
 * Handshake: the first request must be `initialize` with the daemon's token. Anything else, or a
 * wrong token, is answered UNAUTHORIZED and the connection is closed after the answer is flushed.
 * Until then a connection is a stranger: its frames are capped at `PRE_AUTH_MAX_MESSAGE_BYTES`
 * and it must authenticate within `handshakeTimeoutMs`, so unauthenticated peers cost the daemon
 * almost nothing.
 */
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import {
  createMessageConnection,
  ErrorCodes as RpcErrorCodes,
  ResponseError,
  type NotificationType,
  type Message,
  type MessageConnection,
} from 'vscode-jsonrpc/node.js';
import { ExecdError, type ErrorData } from '../../protocol/errors.js';
import { formatZodError } from '../../protocol/fields.js';
import { SUPPORTED_PROTOCOL_VERSIONS } from '../../protocol/types.js';
import { handshakeRefusal } from './handshake.js';
import { Initialize } from '../../protocol/methods.js';
import type { DaemonContext } from '../context.js';
import type { OutputFlow } from '../runs/foreground.js';
import type { HandlerEntry } from './handler.js';
import type { SessionHolder } from '../sessions/sessions.js';
import {
  BoundedSocketWriter,
  createGuardedReader,
  type StreamListener,
  type TransportLimits,
  type ViolationListener,
} from './transport.js';

let connectionCounter = 0;

/** Largest frame a connection may send before it has authenticated; `initialize` is ~200 bytes. */
export const PRE_AUTH_MAX_MESSAGE_BYTES = 64 * 1024;

/** Turns an error value into the JSON-RPC error response. */
export function toResponseError(error: ExecdError): ResponseError<ErrorData> {
  const data: ErrorData = { ...error.details, code: error.name };
  if (error.name === 'PROTOCOL_VERSION_MISMATCH') data.supportedVersions = SUPPORTED_PROTOCOL_VERSIONS;
  return new ResponseError(error.code, error.message, data);
}

/** One client connection to the daemon. */
export class ClientConnection implements SessionHolder {
  readonly id = ++connectionCounter;
  readonly openSessions = new Set<string>();
  readonly rpc: MessageConnection;
  private authedFlag = false;
  /** True once `initialize` carried the admin token (daemon/sessions/admin.ts). */
  admin = false;
  /** The `client.name` given in `initialize` (the audit log's client). */
  clientName: string | undefined;
  private handshakeTimer: NodeJS.Timeout | undefined;
  /** Resolves when the socket is fully closed (everything queued was flushed, or dropped). */
  readonly gone: Promise<void>;
  /** Requests being handled; their answers are not on the socket yet. */
  private readonly inFlight = new Set<Promise<unknown>>();
  private closedFlag = false;
  /** Set once the socket turned out to be a transfer stream: its transfer ends it, not `close`. */
  private streamTaken = false;
  private readonly writer: BoundedSocketWriter;
  private readonly closeListeners: Array<() => void> = [];

  constructor(
    readonly socket: Socket,
    private readonly daemon: DaemonContext,
    handlers: readonly HandlerEntry[],
  ) {
    this.gone = new Promise((resolve) => socket.once('close', () => resolve()));
    const limits: TransportLimits = {
      // Read per frame: the full cap applies from the first frame after `initialize` succeeded.
      maxMessageBytes: () => {
        const configured = daemon.config.get().maxMessageBytes;
        if (this.authedFlag || configured <= PRE_AUTH_MAX_MESSAGE_BYTES) return configured;
        return { bytes: PRE_AUTH_MAX_MESSAGE_BYTES, name: 'the limit before initialize' };
      },
      maxUnsentBytes: () => daemon.config.get().maxUnsentBytes,
      unreadTimeoutMs: () => daemon.config.get().unreadTimeoutMs,
    };
    const violated: ViolationListener = (violation) => this.drop(violation);
    this.writer = new BoundedSocketWriter(socket, limits, violated);
    const stream: StreamListener = (verdict) => this.takeStream(verdict);
    this.rpc = createMessageConnection(createGuardedReader(socket, limits, violated, stream), this.writer);
    // One catch-all handler: per-method handlers would receive params spread by position (an
    // array) or a token in place of absent params; this one gets exactly what was sent, for zod.
    const byMethod = new Map(handlers.map((entry) => [entry.decl.method, entry]));
    this.rpc.onRequest((method, params, token) => {
      const entry = byMethod.get(method);
      if (entry) return this.track(this.dispatch(entry, params, token));
      if (!this.authed) return this.refuse();
      return new ResponseError(RpcErrorCodes.MethodNotFound, `unknown method: ${method}`);
    });
    // A malformed frame or a broken socket ends this connection only.
    this.rpc.onError(() => this.close());
    this.rpc.onClose(() => this.close());
    socket.on('error', () => this.close());
    socket.on('close', () => this.close());
    this.rpc.listen();
    const handshakeMs = daemon.config.get().handshakeTimeoutMs;
    this.handshakeTimer = setTimeout(() => this.handshakeExpired(handshakeMs), handshakeMs);
    this.handshakeTimer.unref();
  }

  /** True once `initialize` succeeded on this connection. */
  get authed(): boolean {
    return this.authedFlag;
  }

  /** Set by `initialize` on success: from then on full frame size, no handshake deadline. */
  set authed(value: boolean) {
    this.authedFlag = value;
    if (!value) return;
    clearTimeout(this.handshakeTimer);
    this.handshakeTimer = undefined;
  }

  /** A peer that never authenticated in time is told why and closed. */
  private handshakeExpired(handshakeMs: number): void {
    this.handshakeTimer = undefined;
    if (this.authedFlag || this.closedFlag) return;
    const message = `no initialize within handshakeTimeoutMs (${handshakeMs})`;
    this.daemon.log.warn({ conn: this.id, reason: message }, 'connection dropped');
    const error = toResponseError(new ExecdError('UNAUTHORIZED', message));
    // A farewell that cannot be written changes nothing: the connection closes either way.
    this.writer.write({ jsonrpc: '2.0', id: null, error: error.toJson() } as Message).catch(() => {});
    this.close();
    this.socket.pause();
  }

  /**
   * The connection turned out to be a transfer stream: the transfer its token names takes the
   * socket, or the peer is told why not and hung up on. Holding a token issued to an authenticated
   * session is this connection's authentication.
   */
  private takeStream(verdict: Parameters<StreamListener>[0]): void {
    const refuse = (reason: string) => {
      this.daemon.log.warn({ conn: this.id, reason }, 'connection dropped');
      this.socket.end(`error ${reason}\n`);
      setTimeout(() => this.socket.destroy(), 1_000).unref();
      this.close();
    };
    if (verdict.kind === 'bad') return refuse(verdict.reason);
    // From now on the transfer owns the socket. A peer that ends its side after its bytes (a tar
    // upload) must still get the answer, so the end of its side does not end ours.
    this.streamTaken = true;
    this.socket.allowHalfOpen = true;
    import('../fs/service.js')
      .then(({ fsServiceOf }) => {
        // Taken even when the connection closed meanwhile: a peer that sent its whole stream and
        // ended its side at once (a small tar upload) still delivers it, and a stream cut short
        // fails its transfer with the reason rather than leaving it waiting.
        const refusal = fsServiceOf(this.daemon).transfers.attachStream(verdict, this.socket);
        if (refusal !== undefined) return refuse(refusal);
        this.authed = true;
      })
      .catch((error: unknown) => refuse(`internal error: ${String(error)}`));
  }

  /** The back-pressure of this connection, for the runs that stream output to it. */
  get outputFlow(): OutputFlow {
    return this.writer;
  }

  /** True once the connection is gone. */
  get closed(): boolean {
    return this.closedFlag;
  }

  /** Calls `listener` once when the connection closes; the returned function unsubscribes it. */
  onClose(listener: () => void): () => void {
    if (this.closedFlag) listener();
    else this.closeListeners.push(listener);
    return () => {
      const at = this.closeListeners.indexOf(listener);
      if (at >= 0) this.closeListeners.splice(at, 1);
    };
  }

  /** Sends a notification unless the connection is gone; a failed write closes nothing else. */
  notify<P>(type: NotificationType<P>, params: P): boolean {
    if (this.closedFlag) return false;
    void this.rpc.sendNotification(type, params).catch(() => {});
    return true;
  }

  /** Closes the connection after pending writes are flushed. */
  close(): void {
    if (this.closedFlag) return;
    this.closedFlag = true;
    clearTimeout(this.handshakeTimer);
    if (!this.streamTaken) {
      this.socket.end();
      setTimeout(() => this.socket.destroy(), 1_000).unref();
    }
    this.rpc.dispose();
    for (const listener of this.closeListeners.splice(0)) listener();
  }

  /**
   * Ends a connection whose peer broke a transport bound. A broken frame is answered first (id
   * null: the request's id was never read) so the peer learns why; a peer that stopped reading is
   * cut off at once.
   */
  private drop(violation: Parameters<ViolationListener>[0]): void {
    this.daemon.log.warn({ conn: this.id, reason: violation.message }, 'connection dropped');
    if (violation.code === 'UNREAD') {
      this.close();
      this.socket.destroy();
      return;
    }
    const error =
      violation.code === 'LIMIT_EXCEEDED'
        ? toResponseError(new ExecdError('LIMIT_EXCEEDED', violation.message))
        : new ResponseError(RpcErrorCodes.ParseError, violation.message);
    // A farewell that cannot be written changes nothing: the connection closes either way.
    this.writer.write({ jsonrpc: '2.0', id: null, error: error.toJson() } as Message).catch(() => {});
    this.close();
    // Nothing more it sends will be read: stop taking (and discarding) its bytes now.
    this.socket.pause();
  }

  private refuse(
    why = new ExecdError('UNAUTHORIZED', 'the first request must be initialize with the daemon token'),
  ): ResponseError<ErrorData> {
    // The answer goes out first, then the connection is closed.
    this.writer.afterNextWrite(() => this.close());
    return toResponseError(why);
  }

  /**
   * Resolves once every request in flight has been answered and its answer queued on the socket
   * (vscode-jsonrpc writes it in the microtasks after the handler settles; a macrotask later they
   * have all run).
   */
  async answered(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    await new Promise((resolve) => setImmediate(resolve));
  }

  private track(handling: Promise<unknown>): Promise<unknown> {
    this.inFlight.add(handling);
    const forget = () => {
      this.inFlight.delete(handling);
    };
    // Both branches handled (vscode-jsonrpc answers a rejection): `finally` would re-raise it unhandled.
    handling.then(forget, forget);
    return handling;
  }

  private async dispatch(
    entry: HandlerEntry,
    raw: unknown,
    token: Parameters<HandlerEntry['handle']>[1]['token'],
  ): Promise<unknown> {
    this.daemon.requestsHandled += 1;
    const answer = await this.answerOf(entry, raw, token);
    const observer = this.daemon.observer;
    if (observer.active) {
      const data = answer instanceof ResponseError ? (answer.data as { code?: string } | undefined) : undefined;
      observer.request(entry.decl.method, answer instanceof ResponseError ? (data?.code ?? 'INTERNAL_ERROR') : 'ok');
    }
    return answer;
  }

  private async answerOf(
    entry: HandlerEntry,
    raw: unknown,
    token: Parameters<HandlerEntry['handle']>[1]['token'],
  ): Promise<unknown> {
    const isInitialize = entry.decl === (Initialize as unknown);
    if (!this.authed && !isInitialize) return this.refuse();
    if (this.daemon.shuttingDown)
      return toResponseError(new ExecdError('SHUTTING_DOWN', 'the daemon is shutting down'));
    const parsed = entry.decl.params.safeParse(raw);
    if (!parsed.success) {
      if (isInitialize) return this.refuse(handshakeRefusal(raw, parsed.error));
      return new ResponseError(RpcErrorCodes.InvalidParams, formatZodError(parsed.error), { code: 'INVALID_PARAMS' });
    }
    const started = performance.now();
    let outcome: unknown;
    try {
      outcome = await entry.handle(parsed.data, { daemon: this.daemon, conn: this, token });
    } catch (error) {
      this.daemon.log.error({ method: entry.decl.method, err: error }, 'handler failed');
      return new ResponseError(
        RpcErrorCodes.InternalError,
        `internal error in ${entry.decl.method}: ${(error as Error).message}`,
      );
    }
    const log = this.daemon.log;
    if (log.isLevelEnabled('debug')) {
      const sessionId = (parsed.data as { sessionId?: string } | undefined)?.sessionId;
      log.debug(
        { method: entry.decl.method, sessionId, conn: this.id, ms: Math.round(performance.now() - started) },
        'request',
      );
    }
    if (outcome instanceof ExecdError) {
      if (outcome.name === 'UNAUTHORIZED') return this.refuse(outcome);
      return toResponseError(outcome);
    }
    return outcome;
  }
}
