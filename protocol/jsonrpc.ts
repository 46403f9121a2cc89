/**
 * vscode-jsonrpc's runtime, loaded the cheap way for a short-lived client (docs/performance.md, B5):
 *
 * - with `require`: vscode-jsonrpc is CommonJS, and an ESM `import` of it first makes Node scan its
 *   sources for export names (cjs-module-lexer), ~30 ms of an `execd run`; `require` gives the very
 *   same module instances without the scan;
 * - without the package's node entry (`lib/node/main.js`), which loads `crypto`, `os` and `path` for
 *   pipe-name and IPC helpers execd never uses (~12 ms); execd loads the protocol core and the node
 *   runtime layer (`ril`) directly, and installs the runtime layer as that entry would.
 *
 * The client's modules take vscode-jsonrpc's values from here and its types from the package. The
 * daemon may import the package as usual: both ways yield the same module instances.
 */
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import type * as Rpc from 'vscode-jsonrpc/lib/common/api.js';
import type * as Ril from 'vscode-jsonrpc/lib/node/ril.js';

const load = createRequire(import.meta.url);
const rpc = load('vscode-jsonrpc/lib/common/api.js') as typeof Rpc;
const ril = (load('vscode-jsonrpc/lib/node/ril.js') as typeof Ril.default).default;
ril.install();

/** vscode-jsonrpc's `AbstractMessageWriter`. */
export const AbstractMessageWriter = rpc.AbstractMessageWriter;
/** vscode-jsonrpc's `CancellationTokenSource`. */
export const CancellationTokenSource = rpc.CancellationTokenSource;
/** vscode-jsonrpc's `ConnectionError`: a request on a closed or disposed connection (never sent). */
export const ConnectionError = rpc.ConnectionError;
/** vscode-jsonrpc's `ErrorCodes`. */
export const ErrorCodes = rpc.ErrorCodes;
/** vscode-jsonrpc's `NotificationType`. */
export const NotificationType = rpc.NotificationType;
/** vscode-jsonrpc's `ProgressType`. */
export const ProgressType = rpc.ProgressType;
/** vscode-jsonrpc's `RequestType`. */
export const RequestType = rpc.RequestType;
/** A typed request (the type of `RequestType`'s instances). */
export type RequestType<P, R, E> = Rpc.RequestType<P, R, E>;
/** vscode-jsonrpc's `ResponseError`. */
export const ResponseError = rpc.ResponseError;

/** Reads framed messages from a socket (what the node entry's `SocketMessageReader` is). */
export class SocketMessageReader extends rpc.ReadableStreamMessageReader {
  constructor(socket: Socket) {
    super(ril().stream.asReadableStream(socket), 'utf-8');
  }
}

/** A message connection over a reader and a writer, logging nothing (as the node entry's default). */
export function createMessageConnection(
  reader: Rpc.MessageReader,
  writer: Rpc.MessageWriter,
  options?: Rpc.ConnectionOptions,
): Rpc.MessageConnection {
  return rpc.createMessageConnection(reader, writer, rpc.NullLogger, options);
}
