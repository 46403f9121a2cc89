/** The file methods (docs/files.md); the work is in `daemon/fs/`. */
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
import { countDirectories, inotifyShare } from '../fs/watch-budget.js';
import { mkdirPath, movePath, removePath, writePath } from '../fs/write-ops.js';
import { handler, type HandlerContext, type HandlerEntry } from '../net/handler.js';
import { configFor } from '../sessions/bound-config.js';
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

/** Transfers whose begin passed the limits and has not answered yet, by session (counted against both). */
const beginning = new WeakMap<object, Map<string, number>>();

/**
 * Refuses a transfer past `maxFsTransfersPerSession` or `maxFsTransfers`; otherwise reserves its
 * slot at once (no await between the check and the count) and returns the release, to call once
 * the begin has answered (the transfer then counts itself, or there is none).
 */
function reserveTransfer(ctx: HandlerContext, sessionId: string): ExecdError | (() => void) {
  // Per session: the bound configuration; daemon-wide (`maxFsTransfers`): the live one.
  const config = { ...configFor(ctx.daemon, sessionId), maxFsTransfers: ctx.daemon.config.get().maxFsTransfers };
  const { transfers } = fsServiceOf(ctx.daemon);
  let pending = beginning.get(ctx.daemon);
  if (!pending) beginning.set(ctx.daemon, (pending = new Map<string, number>()));
  let total = 0;
  for (const n of pending.values()) total += n;
  const own = pending.get(sessionId) ?? 0;
  if (transfers.countOf(sessionId) + own >= config.maxFsTransfersPerSession)
    return new ExecdError(
      'LIMIT_EXCEEDED',
      `maxFsTransfersPerSession limit reached (${config.maxFsTransfersPerSession}) for session ${sessionId}`,
    );
  if (transfers.size + total >= config.maxFsTransfers)
    return new ExecdError('LIMIT_EXCEEDED', `maxFsTransfers limit reached (${config.maxFsTransfers})`);
  pending.set(sessionId, own + 1);
  const held = pending;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const left = (held.get(sessionId) ?? 1) - 1;
    if (left > 0) held.set(sessionId, left);
    else held.delete(sessionId);
  };
}

const ownerOf = (params: { sessionId: string }, ctx: HandlerContext) => ({
  connId: ctx.conn.id,
  sessionId: params.sessionId,
});

/** The bytes base64 `data` decodes to. */
function base64Bytes(data: string): number {
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.floor((data.length * 3) / 4) - padding;
}

/**
 * Reports a file call's bytes to what watches the daemon (`execd_fs_bytes_total`): a read's
 * `bytes`, or the `written` bytes of a write that succeeded; passes the answer through.
 */
function counted<R>(ctx: HandlerContext, direction: 'read' | 'write', answer: R, written?: number): R {
  if (!ctx.daemon.observer.active || answer instanceof ExecdError) return answer;
  const bytes = direction === 'read' ? (answer as { bytes?: number }).bytes : written;
  if (bytes !== undefined && bytes > 0) ctx.daemon.observer.fsBytes(direction, bytes);
  return answer;
}

/** Watches being set up (past the limit check, not yet added), by session. */
const settingUp = new WeakMap<object, Map<string, number>>();

/** The rest of `fs/watch` once its slot is counted: resolve, check, add. */
async function addWatch(
  call: FsCall,
  params: { sessionId: string; path: string; recursive?: boolean },
  ctx: HandlerContext,
  /** Called once the watch table counts the watch itself. */
  onCounted: () => void,
): Promise<{ watchId: string } | ExecdError> {
  const target = targetOf(call, params.path);
  let real: string;
  try {
    real = await realpath(target);
  } catch (error) {
    return fsErrorOf(call.method, target, error);
  }
  const why = refusal(call.policy, real, 'read');
  if (why) return denied(call.method, target, why);
  // Counted in directories before the watcher is set up; checked again after the walk's awaits,
  // in the same turn as the watch enters the table, so a burst cannot pass the budgets.
  const { watches } = fsServiceOf(ctx.daemon);
  const config = ctx.daemon.config.get();
  const daemonMax = Math.min(config.maxWatchedDirs, inotifyShare() ?? Infinity);
  const room = () =>
    Math.min(config.maxWatchedDirsPerSession - watches.dirsOf(params.sessionId), daemonMax - watches.dirsTotal);
  const dirs = params.recursive ? await countDirectories(real, Math.max(0, room()), call.policy) : 1;
  if (dirs > room())
    return new ExecdError(
      'LIMIT_EXCEEDED',
      config.maxWatchedDirsPerSession - watches.dirsOf(params.sessionId) < daemonMax - watches.dirsTotal
        ? `fs/watch ${target}: maxWatchedDirsPerSession limit reached (${config.maxWatchedDirsPerSession} directories)`
        : `fs/watch ${target}: maxWatchedDirs limit reached (${daemonMax} directories)`,
    );
  trackConnection(ctx.daemon, ctx.conn);
  // `add` enters the watch in the table before its first await.
  const adding = watches.add(params.sessionId, ctx.conn, call.policy, {
    real,
    shown: target,
    recursive: params.recursive ?? false,
    dirs,
  });
  onCounted();
  const watchId = await adding;
  return watchId instanceof ExecdError ? watchId : { watchId };
}

/** Handlers of the file methods. */
export const fsHandlers = [
  fsHandler(FsStat, (call, params) => statPath(call, params.path)),
  fsHandler(FsList, (call, params, ctx) =>
    listPath(call, params, { store: fsServiceOf(ctx.daemon).listings, sessionId: params.sessionId }),
  ),
  fsHandler(FsRead, async (call, params, ctx) => counted(ctx, 'read', await readPath(call, params))),
  fsHandler(FsWrite, async (call, params, ctx) =>
    counted(ctx, 'write', await writePath(call, params), base64Bytes(params.data)),
  ),
  fsHandler(FsMkdir, (call, params) => mkdirPath(call, params)),
  fsHandler(FsRemove, (call, params) => removePath(call, params)),
  fsHandler(FsMove, (call, params) => movePath(call, params)),

  fsHandler(FsWatch, async (call, params, ctx) => {
    const { watches } = fsServiceOf(ctx.daemon);
    const max = configFor(ctx.daemon, params.sessionId).maxWatchesPerSession;
    let pending = settingUp.get(ctx.daemon);
    if (!pending) settingUp.set(ctx.daemon, (pending = new Map<string, number>()));
    const own = pending.get(params.sessionId) ?? 0;
    if (watches.countOf(params.sessionId) + own >= max)
      return new ExecdError('LIMIT_EXCEEDED', `maxWatchesPerSession limit reached (${max})`);
    // Counted until the table holds it (or it is refused), so a burst of watches cannot pass the limit.
    pending.set(params.sessionId, own + 1);
    const held = pending;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const left = (held.get(params.sessionId) ?? 1) - 1;
      if (left > 0) held.set(params.sessionId, left);
      else held.delete(params.sessionId);
    };
    try {
      return await addWatch(call, params, ctx, release);
    } finally {
      release();
    }
  }),

  fsHandler(FsUnwatch, async (_call, params, ctx) => ({
    unwatched: await fsServiceOf(ctx.daemon).watches.remove(params.watchId, params.sessionId, ctx.conn.id),
  })),

  fsHandler(FsUploadBegin, async (call, params, ctx) => {
    const release = reserveTransfer(ctx, params.sessionId);
    if (release instanceof ExecdError) return release;
    trackConnection(ctx.daemon, ctx.conn);
    try {
      return await fsServiceOf(ctx.daemon).transfers.beginUpload(call, ownerOf(params, ctx), params);
    } finally {
      release();
    }
  }),
  fsHandler(FsUploadChunk, async (_call, params, ctx) =>
    counted(
      ctx,
      'write',
      await fsServiceOf(ctx.daemon).transfers.uploadChunk(ownerOf(params, ctx), params),
      base64Bytes(params.data),
    ),
  ),
  fsHandler(FsUploadCommit, (call, params, ctx) =>
    fsServiceOf(ctx.daemon).transfers.commitUpload(call, ownerOf(params, ctx), params),
  ),
  fsHandler(FsUploadAbort, (_call, params, ctx) =>
    fsServiceOf(ctx.daemon).transfers.abortUpload(ownerOf(params, ctx), params.uploadId),
  ),

  fsHandler(FsDownloadBegin, async (call, params, ctx) => {
    const release = reserveTransfer(ctx, params.sessionId);
    if (release instanceof ExecdError) return release;
    trackConnection(ctx.daemon, ctx.conn);
    try {
      return await fsServiceOf(ctx.daemon).transfers.beginDownload(call, ownerOf(params, ctx), params);
    } finally {
      release();
    }
  }),
  fsHandler(FsDownloadChunk, async (_call, params, ctx) =>
    counted(ctx, 'read', await fsServiceOf(ctx.daemon).transfers.downloadChunk(ownerOf(params, ctx), params)),
  ),
  fsHandler(FsDownloadEnd, (_call, params, ctx) =>
    fsServiceOf(ctx.daemon).transfers.endDownload(ownerOf(params, ctx), params.downloadId),
  ),
];
