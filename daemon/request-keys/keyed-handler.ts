/**
 * The one wrapper that gives every keyed method (docs/reconnect.md) its request-key semantics: a repeat of
 * a key in the same session answers the first answer (waiting for it while in flight) and acts
 * no more; the same key with other params is INVALID_PARAMS. Runs that may outlive their
 * connection (`shell/run`, `terminal/run`) get a `DetachableRun` as their cancellation.
 */
import { ExecdError } from '../../protocol/errors.js';
import type { AnyRequestDecl } from '../../protocol/methods.js';
import { REQUEST_KEY_REUSED } from '../../protocol/request-key.js';
import type { HandlerContext, HandlerEntry } from '../net/handler.js';
import { DetachableRun } from './detachable-run.js';
import { fingerprintRequest } from './fingerprint.js';
import type { KeyEntry } from './key-store.js';

type Params = Record<string, unknown> & { sessionId: string; requestKey?: string };

/** `entries` with request-key handling around those of `keyed`; `detachable` runs may outlive their connection. */
export function keyRequests(
  entries: readonly HandlerEntry[],
  keyed: readonly AnyRequestDecl[],
  detachable: readonly AnyRequestDecl[],
): HandlerEntry[] {
  return entries.map((entry) => {
    if (!keyed.includes(entry.decl)) return entry;
    return { decl: entry.decl, handle: keyedHandle(entry, detachable.includes(entry.decl)) };
  });
}

function keyedHandle(entry: HandlerEntry, detachable: boolean): HandlerEntry['handle'] {
  const method = entry.decl.method;
  return (raw, ctx) => {
    const params = raw as Params;
    const { requestKey, sessionId } = params;
    if (requestKey === undefined) return entry.handle(raw, ctx);
    const session = ctx.daemon.sessions.require(sessionId, ctx.conn);
    if (session instanceof ExecdError) return session;
    const store = ctx.daemon.requestKeys;
    const fingerprint = fingerprintRequest(method, params);
    const seen = store.lookup(sessionId, requestKey);
    if (seen) {
      if (seen.method !== method || seen.fingerprint !== fingerprint) {
        return new ExecdError('INVALID_PARAMS', `requestKey: ${REQUEST_KEY_REUSED}`);
      }
      seen.onRepeat?.(params, ctx);
      return seen.answer;
    }
    const config = ctx.daemon.config.get();
    const run = detachable && config.reconnectGraceMs > 0 ? detachableRun(ctx, params) : undefined;
    const context: HandlerContext = run ? { ...ctx, token: run.token, attached: run.attached } : ctx;
    let act: (value?: unknown) => void = () => {};
    const answer = new Promise<unknown>((resolve) => (act = resolve)).then(() => entry.handle(raw, context));
    const remembered: KeyEntry = { method, fingerprint, answer, bytes: 0 };
    if (run) remembered.onRepeat = (repeat, repeatCtx) => run.adopt(repeatCtx as HandlerContext, repeat);
    const refused = store.add(sessionId, requestKey, remembered);
    if (refused) {
      run?.finish();
      // Never acted on: the pending promise is dropped with the entry.
      return refused;
    }
    act();
    if (run) {
      const finish = () => run.finish();
      answer.then(finish, finish);
    }
    return answer;
  };
}

function detachableRun(ctx: HandlerContext, params: Params): DetachableRun {
  return new DetachableRun(ctx, params, () => ctx.daemon.config.get().reconnectGraceMs);
}
