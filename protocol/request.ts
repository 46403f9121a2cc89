/**
 * The shape of a request declaration (PROTOCOL.md): a method name, a params schema built on first
 * read, and the typed vscode-jsonrpc request. `methods.ts` and the per-area protocol modules
 * (`fs.ts`) declare their methods with `request`.
 */
import type { z } from 'zod';
import type { ErrorData } from './errors.js';
import { RequestType } from './jsonrpc.js';
import { withRequestKey } from './request-key.js';
import { zod, type Zod } from './zod.js';

/** A request declaration: the method name, its params schema (built on first read) and its typed request. */
export interface RequestDecl<S extends z.ZodType, R> {
  readonly method: string;
  readonly params: S;
  readonly type: RequestType<z.output<S>, R, ErrorData>;
}

/**
 * Declares a request. Curried so that the result type is written and the params type is inferred
 * from the schema's builder: `request<ShellRunResult>()('shell/run', (z) => z.strictObject(…))`.
 */
export function request<R>() {
  return <S extends z.ZodType>(method: string, build: (z: Zod) => S): RequestDecl<S, R> => {
    let params: S | undefined;
    return {
      method,
      get params() {
        return (params ??= build(zod()));
      },
      type: new RequestType<z.output<S>, R, ErrorData>(method),
    };
  };
}

/** Declares a request with a side effect: its params also take the optional `requestKey` (docs/reconnect.md). */
export function keyed<R>() {
  return <Shape extends z.core.$ZodShape, C extends z.core.$ZodObjectConfig>(
    method: string,
    build: (z: Zod) => z.ZodObject<Shape, C>,
  ) => request<R>()(method, (z) => withRequestKey(z, build(z)));
}

/** Any request declaration. */
export type AnyRequestDecl = RequestDecl<z.ZodType, unknown>;
/** Params of a declared request, as a client writes them. */
export type ParamsOf<D> = D extends RequestDecl<infer S, unknown> ? z.input<S> : never;
/** Result of a declared request. */
export type ResultOf<D> = D extends RequestDecl<z.ZodType, infer R> ? R : never;
