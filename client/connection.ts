/**
 * The client library: connect to a daemon, authenticate, and call the methods declared in
 * `protocol/` with their own types.
 */
import { readFileSync } from 'node:fs';
import { connect as netConnect, type Socket } from 'node:net';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { Disposable, MessageConnection, NotificationType } from 'vscode-jsonrpc/node.js';
import { errorNameOf, type ErrorData, type ErrorName } from '../protocol/errors.js';
import {
  CancellationTokenSource,
  ConnectionError,
  ErrorCodes as RpcErrorCodes,
  ResponseError,
} from '../protocol/jsonrpc.js';
import {
  ConfigGet,
  Initialize,
  JobExited,
  OutputBytesProgressType,
  OutputProgressType,
  SessionClose,
  SessionOpen,
  ShellRun,
  type AnyRequestDecl,
  type ParamsOf,
  type ResultOf,
} from '../protocol/methods.js';
import type {
  InitializeResult,
  JobExitedParams,
  OutputProgress,
  ShellRunResult,
  YieldedRunResult,
} from '../protocol/types.js';
import { createDrainingConnection } from './draining-connection.js';
import { pumpInput } from './run-input.js';
import { FsClient } from './fs.js';
import { resolveEndpoint, type Endpoint } from './endpoint.js';
import { assertKeepAliveMs, keepAlive } from './keep-alive.js';
import {
  backoffMs,
  hasKey,
  reconnectPolicy,
  withKey,
  type ReconnectOptions,
  type ReconnectPolicy,
} from './reconnect.js';
import {
  describeAddress,
  failSocket,
  openTransport,
  parseDaemonUrl,
  socketFailure,
  type ClientTlsOptions,
} from './transport-url.js';

/** How to reach and authenticate to a daemon. */
export interface ConnectOptions extends Partial<Endpoint>, ClientTlsOptions {
  /** A daemon URL (`tls://HOST:PORT`, `tcp://HOST:PORT`, `unix:///PATH`) instead of `socketPath`. */
  url?: string;
  /** Cut the connection (failing pending calls) when the daemon sends nothing this long; see keep-alive.ts. */
  keepAliveMs?: number;
  /** Opening a network socket (TCP and TLS handshake) may take this long; default 10 s. */
  connectTimeoutMs?: number;
  /** The token; default `EXECD_TOKEN`, else `<stateDir>/token` (which a network URL requires). */
  token?: string;
  /**
   * Ask for the administrative right (the daemon-wide methods: `config/set`, `job/clean { all }`,
   * `job/list { all }`, `daemon/shutdown`, every session in `daemon/status`): sends the admin
   * token — `adminToken`, else `EXECD_ADMIN_TOKEN`, else `<stateDir>/admin-token` on a local
   * socket. Without one found the connection is an ordinary one. Default false.
   */
  admin?: boolean;
  /** The admin token, for `admin` (a network URL needs it given, or `EXECD_ADMIN_TOKEN`). */
  adminToken?: string;
  /** Reported to the daemon in `initialize`. */
  clientName?: string;
  clientVersion?: string;
  /**
   * Start a daemon in the background when none listens (local sockets only), as the CLI does:
   * racing starters end with one daemon. Default false: no daemon is an `ExecdConnectError`.
   */
  autoStart?: boolean;
  /**
   * Re-dial a dropped connection (docs/reconnect.md): `true` for the defaults, or the bounds of the
   * backoff. Keyed calls in flight are sent again; unkeyed ones fail with `ExecdConnectError`.
   */
  reconnect?: boolean | ReconnectOptions;
}

/** An error answer from the daemon, with its stable name (`SESSION_NOT_FOUND`, `INVALID_PARAMS`…). */
export class ExecdRpcError extends Error {
  constructor(
    readonly code: number,
    readonly errorName: ErrorName | 'INVALID_PARAMS' | 'RPC_ERROR',
    message: string,
    /** The error's `data` (e.g. `FS_CONFLICT`'s current `version`). */
    readonly data?: ErrorData,
  ) {
    super(message);
    this.name = 'ExecdRpcError';
  }
}

/** A connection-level failure: the daemon is not there, or the link broke. */
export class ExecdConnectError extends Error {
  override name = 'ExecdConnectError';
}

function toClientError(error: unknown, socket?: Socket): Error {
  if (error instanceof ResponseError && error.code === RpcErrorCodes.PendingResponseRejected) {
    const why = socket && socketFailure(socket);
    return new ExecdConnectError(`the connection to the daemon was lost before it answered${why ? `: ${why}` : ''}`);
  }
  if (error instanceof ResponseError) {
    return new ExecdRpcError(
      error.code,
      errorNameOf(error.code) ?? 'RPC_ERROR',
      error.message,
      error.data as ErrorData | undefined,
    );
  }
  // vscode-jsonrpc's own wording (`Connection is disposed.`) means nothing to a model or a user.
  if (error instanceof ConnectionError) {
    const why = socket && socketFailure(socket);
    return new ExecdConnectError(
      `the connection to the daemon is closed${why ? ` (${why})` : ''}; the call was not sent: connect again`,
    );
  }
  return error instanceof Error ? new ExecdConnectError(error.message) : new ExecdConnectError(String(error));
}

/** Options of one call. */
export interface CallOptions {
  /** Cancels the request with `$/cancelRequest`; the daemon still answers (e.g. `aborted: true`). */
  signal?: AbortSignal;
}

/** Streaming options of `run`. */
export interface RunOptions extends CallOptions {
  /** Receives output as it arrives, before the result. */
  onOutput?: (progress: OutputProgress) => void;
  /** Receives the exact bytes as they arrive instead (`outputEncoding: 'base64'`). */
  onBytes?: (stream: OutputProgress['stream'], bytes: Buffer) => void;
  /** Streamed into the command's stdin as it arrives (`keepStdinOpen` + `shell/write`); EOF at its end. */
  input?: Readable;
  /** False: the daemon deletes what spilled to disk (every byte reached `onOutput`/`onBytes`). */
  keepCapture?: boolean;
}

/** The params of `ExecdClient.run`: those of `shell/run` but the token, which the client picks. */
export type RunParams = Omit<ParamsOf<typeof ShellRun>, 'outputToken'>;

/** True for the answer of a run that yielded (`yieldMs`): it goes on as job `jobId`. */
export function isYielded(result: ShellRunResult | YieldedRunResult): result is YieldedRunResult {
  return 'yielded' in result;
}

let outputTokenCounter = 0;

/** One authenticated connection under an `ExecdClient`: replaced by a new one when the client reconnects. */
export interface Link {
  rpc: MessageConnection;
  socket: Socket;
  info: InitializeResult;
}

/** How a reconnecting client dials again, and how often. */
export interface Redialer {
  dial(): Promise<Link>;
  policy: ReconnectPolicy;
}

/** The error of a call that was in flight when the link dropped and that had no key to be re-sent with. */
function unkeyedLost(method: string, socket: Socket): ExecdConnectError {
  const why = socketFailure(socket);
  return new ExecdConnectError(
    `the connection to the daemon was lost before it answered ${method}${why ? ` (${why})` : ''}; ` +
      'it had no requestKey, so it was not sent again (it may have acted)',
  );
}

/** True for a failure that means the link is gone (the call may or may not have reached the daemon). */
function linkLost(error: unknown): boolean {
  return error instanceof ResponseError
    ? error.code === RpcErrorCodes.PendingResponseRejected
    : error instanceof ConnectionError;
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * An authenticated connection to a daemon. With `reconnect`, a dropped link is dialed again with
 * bounded backoff, re-authenticated, its sessions re-opened, and every keyed call still waiting
 * is sent again (the client keys every side-effecting call the caller did not key); a call
 * without a key that was in flight fails with `ExecdConnectError`, never hangs.
 */
export class ExecdClient {
  private closed = false;
  private link: Link;
  /** The re-dial in progress: resolves true once a new link is up, false when the client gave up. */
  private redialing: Promise<boolean> | undefined;
  /** Listeners per notification method: vscode-jsonrpc keeps one handler per method, so it fans out here. */
  private readonly listeners = new Map<string, Set<(params: unknown) => void>>();
  /** The sessions this client opened, re-opened (attached unchanged) after a reconnect. */
  private readonly sessions = new Map<string, unknown>();
  private readonly closeListeners = new Set<() => void>();
  private readonly reconnectListeners = new Set<(info: InitializeResult) => void>();

  constructor(
    rpc: MessageConnection,
    socket: Socket,
    info: InitializeResult,
    private readonly redialer?: Redialer,
    private readonly dialStream?: () => Promise<Socket>,
  ) {
    this.link = { rpc, socket, info };
    this.watch(this.link);
  }

  /** The current link's JSON-RPC connection (replaced when the client reconnects). */
  get rpc(): MessageConnection {
    return this.link.rpc;
  }

  /** The daemon's `initialize` answer (of the current link). */
  get info(): InitializeResult {
    return this.link.info;
  }

  /** The file methods (docs/files.md) and `upload`/`download` of any size. */
  readonly fs: FsClient = new FsClient(this);

  /**
   * A new socket to the same daemon, for a transfer stream (`fs.upload`/`fs.download`): no
   * `initialize` on it, a transfer's stream token authenticates it. Undefined: transfers use chunks.
   */
  get openStream(): (() => Promise<Socket>) | undefined {
    return this.dialStream;
  }

  /** Calls a declared method; rejects with `ExecdRpcError` when the daemon answers an error. */
  call<D extends AnyRequestDecl>(decl: D, params: ParamsOf<D>, options: CallOptions = {}): Promise<ResultOf<D>> {
    return this.send(decl, params, options);
  }

  private async send<D extends AnyRequestDecl>(
    decl: D,
    given: ParamsOf<D>,
    options: CallOptions,
    subscribe?: (rpc: MessageConnection) => Disposable,
  ): Promise<ResultOf<D>> {
    const params = this.redialer ? withKey(decl.method, given) : given;
    for (;;) {
      if (this.redialing && !(await this.redialing)) {
        throw new ExecdConnectError('the connection to the daemon was lost and could not be established again');
      }
      const link = this.link;
      try {
        const result = (await this.sendOn(link, decl.method, params, options, subscribe)) as ResultOf<D>;
        this.remember(decl.method, params);
        return result;
      } catch (error) {
        if (!this.redialer || this.closed || !linkLost(error)) throw toClientError(error, link.socket);
        // A call the daemon may have acted on is sent again only with its key.
        const sent = error instanceof ResponseError;
        if (sent && !hasKey(params)) throw unkeyedLost(decl.method, link.socket);
        this.lost(link);
      }
    }
  }

  private async sendOn(
    link: Link,
    method: string,
    params: unknown,
    { signal }: CallOptions,
    subscribe?: (rpc: MessageConnection) => Disposable,
  ): Promise<unknown> {
    const source = signal ? new CancellationTokenSource() : undefined;
    const onAbort = () => source?.cancel();
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    const subscription = subscribe?.(link.rpc);
    try {
      const args: unknown[] = [params];
      if (source) args.push(source.token);
      return await link.rpc.sendRequest(method, ...args);
    } finally {
      subscription?.dispose();
      signal?.removeEventListener('abort', onAbort);
      source?.dispose();
    }
  }

  /** Keeps the sessions this client has open, to re-open them on a new link. */
  private remember(method: string, params: unknown): void {
    const sessionId = (params as { sessionId?: string }).sessionId;
    if (sessionId === undefined) return;
    if (method === SessionOpen.method) this.sessions.set(sessionId, params);
    else if (method === SessionClose.method) this.sessions.delete(sessionId);
  }

  /**
   * Runs a foreground command, streaming its output to `onOutput` when given. With `yieldMs` (not
   * streamed) a command still running then goes on as a background job: `YieldedRunResult`.
   */
  run(params: RunParams & { yieldMs: number }, options?: RunOptions): Promise<ShellRunResult | YieldedRunResult>;
  run(params: RunParams & { yieldMs?: undefined }, options?: RunOptions): Promise<ShellRunResult>;
  async run(params: RunParams, options: RunOptions = {}): Promise<ShellRunResult | YieldedRunResult> {
    const { onOutput, onBytes, input, keepCapture } = options;
    if (!onOutput && !onBytes && !input) return this.call(ShellRun, params, options);
    const outputToken = `out-${process.pid}-${++outputTokenCounter}`;
    // Subscribed on each link the request is sent on: a re-sent run streams on the new one.
    const subscribe = (rpc: MessageConnection) =>
      onBytes
        ? rpc.onProgress(OutputBytesProgressType, outputToken, ({ stream, data }) =>
            onBytes(stream, Buffer.from(data, 'base64')),
          )
        : rpc.onProgress(OutputProgressType, outputToken, (progress) => onOutput?.(progress));
    const running = this.send(
      ShellRun,
      {
        ...params,
        outputToken,
        ...(onBytes && { outputEncoding: 'base64' as const }),
        ...(input && { keepStdinOpen: true }),
        ...(keepCapture !== undefined && { keepCapture }),
      },
      options,
      subscribe,
    );
    // Sent after the run request, on the same connection: the daemon has its stdin open by then.
    const pump = input && pumpInput(this, params.sessionId, outputToken, input);
    try {
      return await running;
    } finally {
      pump?.stop();
    }
  }

  /**
   * Subscribes to a notification. vscode-jsonrpc keeps one handler per notification method, so the
   * client owns that one handler and fans each notice out to every listener (several sessions and
   * tool sets may share a connection); disposing a subscription removes only it.
   */
  onNotification<P>(type: NotificationType<P>, listener: (params: P) => void): Disposable {
    let listeners = this.listeners.get(type.method);
    if (!listeners) {
      const fanOut = new Set<(params: unknown) => void>();
      this.rpc.onNotification(type.method, (params: unknown) => fanOutTo(fanOut, params));
      this.listeners.set(type.method, fanOut);
      listeners = fanOut;
    }
    // A wrapper per subscription: the same function subscribed twice is two subscriptions.
    const entry = (params: unknown) => listener(params as P);
    listeners.add(entry);
    return { dispose: () => listeners.delete(entry) };
  }

  /** Subscribes to `job/exited` notifications. */
  onJobExited(listener: (params: JobExitedParams) => void): Disposable {
    return this.onNotification(JobExited, listener);
  }

  /**
   * Stops reading from the daemon until `resumeReading` (back-pressure from a slow consumer of
   * streamed output: the daemon then pauses the command rather than queue its output).
   */
  pauseReading(): void {
    this.link.socket.pause();
  }

  /** Reads from the daemon again after `pauseReading`. */
  resumeReading(): void {
    this.link.socket.resume();
  }

  /** Calls `listener` when the connection to the daemon is lost for good (with `reconnect`: when re-dialing gave up). */
  onClose(listener: () => void): Disposable {
    this.closeListeners.add(listener);
    return { dispose: () => this.closeListeners.delete(listener) };
  }

  /** Calls `listener` with the new `initialize` answer each time the client reconnected (sessions re-opened). */
  onReconnected(listener: (info: InitializeResult) => void): Disposable {
    this.reconnectListeners.add(listener);
    return { dispose: () => this.reconnectListeners.delete(listener) };
  }

  /** True once the connection is gone (with `reconnect`: for good). */
  get isClosed(): boolean {
    return this.closed;
  }

  /** Closes the connection; a reconnecting client stops re-dialing. */
  close(): void {
    this.closed = true;
    this.link.rpc.dispose();
    this.link.socket.end();
    this.link.socket.destroy();
    this.ended();
  }

  private watch(link: Link): void {
    link.rpc.onClose(() => this.lost(link));
  }

  /** The link dropped: re-dial (once, however many calls noticed), or end the client. */
  private lost(link: Link): void {
    if (this.closed || link !== this.link || this.redialing) return;
    if (!this.redialer) {
      this.closed = true;
      this.ended();
      return;
    }
    const redialing = this.redial(this.redialer);
    this.redialing = redialing;
    const settled = () => {
      if (this.redialing === redialing) this.redialing = undefined;
    };
    redialing.then(settled, settled);
  }

  private async redial(redialer: Redialer): Promise<boolean> {
    const { policy } = redialer;
    for (let attempt = 0; attempt < policy.maxAttempts; attempt++) {
      await delay(backoffMs(policy, attempt));
      if (this.closed) return false;
      let link: Link | undefined;
      try {
        link = await redialer.dial();
        for (const params of this.sessions.values()) await link.rpc.sendRequest(SessionOpen.method, params);
      } catch {
        link?.rpc.dispose();
        link?.socket.destroy();
        continue;
      }
      // close() may have run during the dial.
      if (this.isClosed) {
        link.rpc.dispose();
        link.socket.destroy();
        return false;
      }
      this.link = link;
      for (const [method, fanOut] of this.listeners) {
        link.rpc.onNotification(method, (params: unknown) => fanOutTo(fanOut, params));
      }
      this.watch(link);
      for (const listener of [...this.reconnectListeners]) listener(link.info);
      return true;
    }
    this.closed = true;
    this.ended();
    return false;
  }

  private ended(): void {
    for (const listener of [...this.closeListeners]) listener();
    this.closeListeners.clear();
  }
}

/** Calls every listener; one that throws does not keep the notice from the others. */
function fanOutTo(listeners: Set<(params: unknown) => void>, params: unknown): void {
  let failure: Error | undefined;
  for (const listener of [...listeners]) {
    try {
      listener(params);
    } catch (error) {
      failure ??= error instanceof Error ? error : new Error(`a notification listener threw ${String(error)}`);
    }
  }
  // vscode-jsonrpc catches and logs what a notification handler throws.
  if (failure) throw failure;
}

/** Reads the token: `EXECD_TOKEN`, else `<stateDir>/token`. */
export function readToken(stateDir: string, env: NodeJS.ProcessEnv = process.env): string {
  if (env.EXECD_TOKEN) return env.EXECD_TOKEN;
  try {
    return readFileSync(join(stateDir, 'token'), 'utf8').trim();
  } catch (error) {
    throw new ExecdConnectError(
      `cannot read the daemon token at ${join(stateDir, 'token')}: ${(error as NodeJS.ErrnoException).code}`,
    );
  }
}

/** The admin token: `EXECD_ADMIN_TOKEN`, else `<stateDir>/admin-token`; undefined when neither is there. */
export function readAdminToken(stateDir: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.EXECD_ADMIN_TOKEN) return env.EXECD_ADMIN_TOKEN;
  if (stateDir === undefined) return undefined;
  try {
    return readFileSync(join(stateDir, 'admin-token'), 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** Opens a raw socket to the daemon. */
export function openSocket(socketPath: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = netConnect(socketPath);
    socket.once('connect', () => {
      socket.off('error', reject);
      socket.setNoDelay(true);
      resolve(socket);
    });
    socket.once('error', (error: NodeJS.ErrnoException) =>
      reject(new ExecdConnectError(`no execd daemon is running at ${socketPath} (${error.code ?? error.message})`)),
    );
  });
}

/** Opens the socket `options` name: a URL, else the local endpoint; resolves the token too. */
async function openDaemonSocket(
  options: ConnectOptions,
): Promise<{ socket: Socket; token: string; adminToken?: string }> {
  const address = options.url === undefined ? undefined : parseDaemonUrl(options.url);
  if (typeof address === 'string') throw new ExecdConnectError(address);
  if (address === undefined || address.kind === 'unix') {
    const endpoint = resolveEndpoint({ ...options, socketPath: address?.path ?? options.socketPath });
    // The socket first: with no daemon, "no daemon is running" says more than a missing token file.
    const socket = await openSocket(endpoint.socketPath);
    try {
      const adminToken = options.admin ? (options.adminToken ?? readAdminToken(endpoint.stateDir)) : undefined;
      return { socket, token: options.token ?? readToken(endpoint.stateDir), adminToken };
    } catch (error) {
      socket.destroy();
      throw error;
    }
  }
  // A remote daemon's token file is not here: it comes from the caller or EXECD_TOKEN.
  const token = options.token ?? process.env.EXECD_TOKEN;
  if (!token) throw new ExecdConnectError(`connecting to ${describeAddress(address)} needs a token (or EXECD_TOKEN)`);
  try {
    const adminToken = options.admin ? (options.adminToken ?? readAdminToken(undefined)) : undefined;
    return { socket: await openTransport(address, options, options.connectTimeoutMs), token, adminToken };
  } catch (error) {
    throw new ExecdConnectError((error as Error).message);
  }
}

/** Opens one socket and authenticates on it. */
async function dialLink(options: ConnectOptions): Promise<Link> {
  const { socket, token, adminToken } = await openDaemonSocket(options);
  const rpc = createDrainingConnection(socket);
  // Watches the handshake too (a daemon that vanishes before answering `initialize` is noticed);
  // probes wait for it, as any other first request would be refused.
  let authed = false;
  const probe = async () => (authed ? rpc.sendRequest(ConfigGet.method, {}) : undefined);
  if (options.keepAliveMs !== undefined) keepAlive(socket, options.keepAliveMs, probe);
  try {
    const info = await rpc.sendRequest(Initialize.type, {
      protocolVersion: 1,
      token,
      ...(adminToken !== undefined && { adminToken }),
      client: { name: options.clientName ?? 'execd-client', version: options.clientVersion },
    });
    authed = true;
    return { rpc, socket, info };
  } catch (error) {
    rpc.dispose();
    socket.destroy();
    // A refused TLS session reports its alert just after the close that failed the call.
    await new Promise((resolve) => setImmediate(resolve));
    // Node's server checks a client certificate after the handshake and hangs up without an
    // alert: with TLS 1.3 the client learns of it only as a close before `initialize` is answered.
    if ((socket as { encrypted?: boolean }).encrypted) {
      failSocket(
        socket,
        'the daemon ended the TLS session before answering initialize (is a client certificate its CA signed required?)',
      );
    }
    throw toClientError(error, socket);
  }
}

/**
 * Opens one authenticated connection to the daemon `options` name (a URL, else the local socket),
 * without starting one: `connect` of `connect.ts` is the library's entry, with `autoStart`. With
 * `reconnect`, the client dials the same way again whenever the link drops.
 */
export async function openConnection(options: ConnectOptions): Promise<ExecdClient> {
  if (options.keepAliveMs !== undefined) assertKeepAliveMs(options.keepAliveMs);
  const policy = reconnectPolicy(options.reconnect);
  const { rpc, socket, info } = await dialLink(options);
  const dialStream = async () => (await openDaemonSocket(options)).socket;
  return new ExecdClient(rpc, socket, info, policy && { dial: () => dialLink(options), policy }, dialStream);
}
