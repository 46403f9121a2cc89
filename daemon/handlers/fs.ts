/** The file methods (SPEC §13); the work is in `daemon/fs/`. */
import { realpath } from 'node:fs/promises';
import { ExecdError } from '../../protocol/errors.js';
import {
  FsDownloadBegin,
  FsDownloadChunk,
  FsDownloadEnd,
  FsList,
  FsMkdir,
  FsMove,
  FsRead,
  FsRemove,
  FsStat,
  FsUnwatch,
  FsUploadAbort,
  FsUploadBegin,
  FsUploadChunk,
  FsUploadCommit,
  FsWatch,
  FsWrite,
} from '../../protocol/fs.js';
import type { AnyRequestDecl } from '../../protocol/request.js';
import { fsCallOf, targetOf, type FsCall } from '../fs/call.js';
import { denied, fsErrorOf } from '../fs/errno.js';
import { listPath } from '../fs/list.js';
import { refusal } from '../fs/policy.js';
import { readPath, statPath } from '../fs/read-ops.js';
import { fsServiceOf, trackConnection } from '../fs/service.js';
import { mkdirPath, movePath, removePath, writePath } from '../fs/write-ops.js';
import { handler, type HandlerContext, type HandlerEntry } from '../net/handler.js';
import type { ResultOf } from '../../protocol/methods.js';

/** A file handler: the session is required and the call's policy built before `run`. */
function fsHandler<D extends AnyRequestDecl>(
  decl: D,
  run: (
    call: FsCall,
    params: Parameters<HandlerEntry<D>['handle']>[0],
    ctx: HandlerContext,
  ) => Promise<ResultOf<D> | ExecdError>,
): HandlerEntry {
  return handler(decl, async (params, ctx) => {
    const { sessionId } = params as { sessionId: string };
    const session = ctx.daemon.sessions.require(sessionId, ctx.conn);
    if (session instanceof ExecdError) return session;
    return run(await fsCallOf(ctx.daemon, session, decl.method), params, ctx);
  });
}

/** Refuses a transfer past `maxFsTransfers`. */
function transferLimit(ctx: HandlerContext): ExecdError | undefined {
  const max = ctx.daemon.config.get().maxFsTransfers;
  if (fsServiceOf(ctx.daemon).transfers.size < max) return undefined;
  return new ExecdError('LIMIT_EXCEEDED', `maxFsTransfers limit reached (${max})`);
}

const ownerOf = (params: { sessionId: string }, ctx: HandlerContext) => ({
  connId: ctx.conn.id,
  sessionId: params.sessionId,
});

/** Handlers of the file methods. */
export const fsHandlers = [
  fsHandler(FsStat, (call, params) => statPath(call, params.path)),
  fsHandler(FsList, (call, params) => listPath(call, params)),
  fsHandler(FsRead, (call, params) => readPath(call, params)),
  fsHandler(FsWrite, (call, params) => writePath(call, params)),
  fsHandler(FsMkdir, (call, params) => mkdirPath(call, params)),
  fsHandler(FsRemove, (call, params) => removePath(call, params)),
  fsHandler(FsMove, (call, params) => movePath(call, params)),

  fsHandler(FsWatch, async (call, params, ctx) => {
    const { watches } = fsServiceOf(ctx.daemon);
    const max = ctx.daemon.config.get().maxWatchesPerSession;
    if (watches.countOf(params.sessionId) >= max)
      return new ExecdError('LIMIT_EXCEEDED', `maxWatchesPerSession limit reached (${max})`);
    const target = targetOf(call, params.path);
    let real: string;
    try {
      real = await realpath(target);
    } catch (error) {
      return fsErrorOf(call.method, target, error);
    }
    const why = refusal(call.policy, real, 'read');
    if (why) return denied(call.method, target, why);
    trackConnection(ctx.daemon, ctx.conn);
    const watchId = await watches.add(params.sessionId, ctx.conn, call.policy, {
      real,
      shown: target,
      recursive: params.recursive ?? false,
    });
    return { watchId };
  }),

  fsHandler(FsUnwatch, async (_call, params, ctx) => ({
    unwatched: await fsServiceOf(ctx.daemon).watches.remove(params.watchId, params.sessionId, ctx.conn.id),
  })),

  fsHandler(FsUploadBegin, async (call, params, ctx) => {
    const limited = transferLimit(ctx);
    if (limited) return limited;
    trackConnection(ctx.daemon, ctx.conn);
    return fsServiceOf(ctx.daemon).transfers.beginUpload(call, ownerOf(params, ctx), params);
  }),
  fsHandler(FsUploadChunk, (_call, params, ctx) =>
    fsServiceOf(ctx.daemon).transfers.uploadChunk(ownerOf(params, ctx), params),
  ),
  fsHandler(FsUploadCommit, (call, params, ctx) =>
    fsServiceOf(ctx.daemon).transfers.commitUpload(call, ownerOf(params, ctx), params),
  ),
  fsHandler(FsUploadAbort, (_call, params, ctx) =>
    fsServiceOf(ctx.daemon).transfers.abortUpload(ownerOf(params, ctx), params.uploadId),
  ),

  fsHandler(FsDownloadBegin, async (call, params, ctx) => {
    const limited = transferLimit(ctx);
    if (limited) return limited;
    trackConnection(ctx.daemon, ctx.conn);
    return fsServiceOf(ctx.daemon).transfers.beginDownload(call, ownerOf(params, ctx), params);
  }),
  fsHandler(FsDownloadChunk, (_call, params, ctx) =>
    fsServiceOf(ctx.daemon).transfers.downloadChunk(ownerOf(params, ctx), params),
  ),
  fsHandler(FsDownloadEnd, (_call, params, ctx) =>
    fsServiceOf(ctx.daemon).transfers.endDownload(ownerOf(params, ctx), params.downloadId),
  ),
];
