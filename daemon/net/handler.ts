/**
 * The shape of a request handler: parsed params in, a result or an `ExecdError` value out.
 */
import type { CancellationToken } from 'vscode-jsonrpc';
import type { z } from 'zod';
import type { ExecdError } from '../../protocol/errors.js';
import type { AnyRequestDecl, ResultOf } from '../../protocol/methods.js';
import type { ClientConnection } from './connection.js';
import type { DaemonContext } from '../context.js';

/** What a handler gets besides its params. */
export interface HandlerContext {
  daemon: DaemonContext;
  conn: ClientConnection;
  /** The request's cancellation (`$/cancelRequest`). */
  token: CancellationToken;
  /**
   * For a keyed run that may outlive its connection (docs/reconnect.md): the connection and params of the
   * request now waiting for its answer, which a repeat from another connection takes over.
   */
  attached?: () => RunAttachment;
}

/** The request a detachable run answers to now: where its streamed output goes. */
export interface RunAttachment {
  conn: ClientConnection;
  params: Record<string, unknown>;
}

/** A request handler bound to its declaration. */
export interface HandlerEntry<D extends AnyRequestDecl = AnyRequestDecl> {
  decl: D;
  handle: (
    params: z.output<D['params']>,
    ctx: HandlerContext,
  ) => Promise<ResultOf<D> | ExecdError> | ResultOf<D> | ExecdError;
}

/** Binds a handler to its declaration, typing params and result from it. */
export function handler<D extends AnyRequestDecl>(decl: D, handle: HandlerEntry<D>['handle']): HandlerEntry {
  return { decl, handle } as unknown as HandlerEntry;
}
