/**
 * The client library: connect to a daemon, authenticate, and call the methods declared in
 * `protocol/` with their own types.
 */
import { readFileSync } from 'node:fs';
import { connect as netConnect, type Socket } from 'node:net';
import { join } from 'node:path';
import type { Disposable, MessageConnection, NotificationType } from 'vscode-jsonrpc/node.js';
import { errorNameOf, type ErrorData, type ErrorName } from '../protocol/errors.js';
import { CancellationTokenSource, ErrorCodes as RpcErrorCodes, ResponseError } from '../protocol/jsonrpc.js';
import {
  ConfigGet,
  Initialize,
  JobExited,
  OutputProgressType,
  ShellRun,
  type AnyRequestDecl,
  type ParamsOf,
  type ResultOf,
} from '../protocol/methods.js';
import type { InitializeResult, JobExitedParams, OutputProgress, ShellRunResult } from '../protocol/types.js';
import { createDrainingConnection } from './draining-connection.js';
import { FsClient } from './fs.js';
import { resolveEndpoint, type Endpoint } from './endpoint.js';
import { assertKeepAliveMs, keepAlive } from './keep-alive.js';
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
  /** Reported to the daemon in `initialize`. */
  clientName?: string;
  clientVersion?: string;
  /**
   * Start a daemon in the background when none listens (local sockets only), as the CLI does:
   * racing starters end with one daemon. Default false: no daemon is an `ExecdConnectError`.
   */
  autoStart?: boolean;
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
}

let outputTokenCounter = 0;

/** An authenticated connection to a daemon. */
export class ExecdClient {
  private closed = false;
  /** Listeners per notification method: vscode-jsonrpc keeps one handler per method, so it fans out here. */
  private readonly listeners = new Map<string, Set<(params: unknown) => void>>();

  constructor(
    readonly rpc: MessageConnection,
    private readonly socket: Socket,
    /** The daemon's `initialize` answer. */
    readonly info: InitializeResult,
  ) {
    rpc.onClose(() => (this.closed = true));
  }

  /** The file methods (SPEC §13) and chunked `upload`/`download`. */
  readonly fs: FsClient = new FsClient(this);

  /** Calls a declared method; rejects with `ExecdRpcError` when the daemon answers an error. */
  async call<D extends AnyRequestDecl>(decl: D, params: ParamsOf<D>, options: CallOptions = {}): Promise<ResultOf<D>> {
    const { signal } = options;
    const source = signal ? new CancellationTokenSource() : undefined;
    const onAbort = () => source?.cancel();
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const args: unknown[] = [params];
      if (source) args.push(source.token);
      return await this.rpc.sendRequest(decl.method, ...args);
    } catch (error) {
      throw toClientError(error, this.socket);
    } finally {
      signal?.removeEventListener('abort', onAbort);
      source?.dispose();
    }
  }

  /** Runs a foreground command, streaming its output to `onOutput` when given. */
  async run(params: Omit<ParamsOf<typeof ShellRun>, 'outputToken'>, options: RunOptions = {}): Promise<ShellRunResult> {
    const { onOutput } = options;
    if (!onOutput) return this.call(ShellRun, params, options);
    const outputToken = `out-${process.pid}-${++outputTokenCounter}`;
    const subscription = this.rpc.onProgress(OutputProgressType, outputToken, onOutput);
    try {
      return await this.call(ShellRun, { ...params, outputToken }, options);
    } finally {
      subscription.dispose();
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
      this.rpc.onNotification(type, (params: P) => fanOutTo(fanOut, params));
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
    this.socket.pause();
  }

  /** Reads from the daemon again after `pauseReading`. */
  resumeReading(): void {
    this.socket.resume();
  }

  /** Calls `listener` when the connection to the daemon is lost. */
  onClose(listener: () => void): Disposable {
    return this.rpc.onClose(listener);
  }

  /** True once the connection is gone. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** Closes the connection. */
  close(): void {
    this.closed = true;
    this.rpc.dispose();
    this.socket.end();
    this.socket.destroy();
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
async function openDaemonSocket(options: ConnectOptions): Promise<{ socket: Socket; token: string }> {
  const address = options.url === undefined ? undefined : parseDaemonUrl(options.url);
  if (typeof address === 'string') throw new ExecdConnectError(address);
  if (address === undefined || address.kind === 'unix') {
    const endpoint = resolveEndpoint({ ...options, socketPath: address?.path ?? options.socketPath });
    // The socket first: with no daemon, "no daemon is running" says more than a missing token file.
    const socket = await openSocket(endpoint.socketPath);
    try {
      return { socket, token: options.token ?? readToken(endpoint.stateDir) };
    } catch (error) {
      socket.destroy();
      throw error;
    }
  }
  // A remote daemon's token file is not here: it comes from the caller or EXECD_TOKEN.
  const token = options.token ?? process.env.EXECD_TOKEN;
  if (!token) throw new ExecdConnectError(`connecting to ${describeAddress(address)} needs a token (or EXECD_TOKEN)`);
  try {
    return { socket: await openTransport(address, options, options.connectTimeoutMs), token };
  } catch (error) {
    throw new ExecdConnectError((error as Error).message);
  }
}

/**
 * Opens one authenticated connection to the daemon `options` name (a URL, else the local socket),
 * without starting one: `connect` of `connect.ts` is the library's entry, with `autoStart`.
 */
export async function openConnection(options: ConnectOptions): Promise<ExecdClient> {
  if (options.keepAliveMs !== undefined) assertKeepAliveMs(options.keepAliveMs);
  const { socket, token } = await openDaemonSocket(options);
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
      client: { name: options.clientName ?? 'execd-client', version: options.clientVersion },
    });
    authed = true;
    return new ExecdClient(rpc, socket, info);
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
