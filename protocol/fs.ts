/**
 * Files through the daemon (docs/files.md): every `fs/*` method, declared once. Bytes travel base64 in
 * `data`. A file larger than one message moves in chunks: an upload is `fs/upload/begin`, then
 * `fs/upload/chunk`s at increasing offsets, then `fs/upload/commit` (or `fs/upload/abort`); a
 * download is `fs/download/begin`, then `fs/download/chunk`s the client pulls, then
 * `fs/download/end`. Each chunk is a request answered once its bytes are on disk (or read), so the
 * number of chunks a client keeps in flight is the flow-control window in both directions.
 *
 * Either begin also answers a `streamToken`: a client may instead move the bytes raw over a
 * connection of their own (a transfer stream, `TRANSFER_STREAM_PREFIX`), which TCP flow-controls
 * and nothing encodes, then commit or end on its JSON-RPC connection as usual.
 *
 * With `format: 'tar'` (docs/files.md) a transfer moves a directory tree as one ustar/pax archive, over
 * its transfer stream only: an upload unpacks into a staging directory renamed into place at
 * commit, a download archives the directory as it walks it.
 */
import { hasNoNul, sessionIdSchema } from './fields.js';
import { NotificationType } from './jsonrpc.js';
import { keyed, request } from './request.js';
import type { Zod } from './zod.js';

/** Largest decoded `data` of one `fs/write` or `fs/upload/chunk`, and largest `length` of a read. */
export const MAX_FS_DATA_BYTES = 8 * 1024 * 1024;
/** `fs/read` and `fs/download/chunk` length when none is given. */
export const DEFAULT_FS_READ_BYTES = 1024 * 1024;
/** Largest `limit` of one `fs/list` page. */
export const MAX_FS_LIST_LIMIT = 10_000;
/** `fs/list` page size when none is given. */
export const DEFAULT_FS_LIST_LIMIT = 1_000;
/** Deepest `fs/list` walk. */
export const MAX_FS_LIST_DEPTH = 8;
/** Longest `path` a file method takes, in characters (Linux `PATH_MAX`). */
export const MAX_FS_PATH_LENGTH = 4096;
/** Events one watch holds before it is flushed; past it they collapse into one `overflow` event. */
export const MAX_FS_WATCH_QUEUE = 1_000;
/** How long a watch gathers events into one `fs/changed` notification. */
export const FS_WATCH_COALESCE_MS = 50;
/**
 * First bytes of a transfer stream: a connection that begins with them carries one transfer's
 * bytes instead of JSON-RPC. The whole preamble is `EXECD-STREAM <streamToken> <bytes>\n`, then
 * an upload sends exactly `bytes` raw bytes; the daemon answers one line, `ok <bytes>\n` (for a
 * download followed by the file's bytes) or `error <reason>\n`, and hangs up.
 */
export const TRANSFER_STREAM_PREFIX = 'EXECD-STREAM ';
/** Longest transfer-stream preamble line, newline included. */
export const MAX_TRANSFER_STREAM_PREAMBLE = 128;

/**
 * The answer line that opens a tar download's stream (in place of `ok <bytes>`): the archive
 * follows until the daemon hangs up, and `fs/download/end` tells its size and SHA-256.
 */
export const TAR_STREAM_ANSWER = 'ok tar';

/** What a transfer moves: one regular file (the default) or a directory tree as a tar archive. */
export type FsTransferFormat = 'file' | 'tar';

/**
 * The preamble of a transfer stream (an upload's `bytes` is what it will send; a download's is 0,
 * and so is a tar upload's, which sends its archive until it ends its side of the stream).
 */
export function transferStreamPreamble(streamToken: string, bytes: number): string {
  return `${TRANSFER_STREAM_PREFIX}${streamToken} ${bytes}\n`;
}

/** The `ifMatch` that asks for a file that does not exist yet. */
export const IF_ABSENT = 'absent';

/** What an `fs/stat` or `fs/list` entry is (`lstat`: a symlink is never followed). */
export type FsEntryType = 'file' | 'directory' | 'symlink' | 'other';

/** `fs/stat`'s answer. `version` is opaque and changes whenever the content may have. */
export interface FsStatResult {
  path: string;
  type: FsEntryType;
  size: number;
  mode: number;
  mtimeMs: number;
  version: string;
}

/** One `fs/list` entry; `path` is absolute. */
export interface FsListEntry {
  path: string;
  type: FsEntryType;
  size: number;
  mtimeMs: number;
}

/** `fs/list`'s answer: one sorted page, and the cursor of the next when there is more. */
export interface FsListResult {
  entries: FsListEntry[];
  nextCursor?: string;
}

/** `fs/read`'s answer: `bytes` decoded bytes of base64 `data` from `offset`. */
export interface FsReadResult {
  data: string;
  bytes: number;
  eof: boolean;
  size: number;
  version: string;
}

/** `fs/write`'s and `fs/upload/commit`'s answer: the file's new version and size. */
export interface FsWriteResult {
  version: string;
  size: number;
}

/** `fs/upload/begin`'s answer. */
export interface FsUploadBeginResult {
  uploadId: string;
  /** Largest decoded chunk the daemon takes. */
  maxChunkBytes: number;
  /** Opens one transfer stream for this upload (in place of chunks): a secret, good once. */
  streamToken: string;
}

/**
 * `fs/upload/commit`'s answer: the file as it now is, and the SHA-256 of what arrived. For a tar
 * upload: the directory's version, the archive's size and SHA-256, and how many entries landed.
 */
export interface FsUploadCommitResult extends FsWriteResult {
  sha256: string;
  entries?: number;
}

/** `fs/download/begin`'s answer: the file as opened; every chunk reads that very file. */
export interface FsDownloadBeginResult {
  downloadId: string;
  /** The file's size (0 for a tar download: its size is known at `fs/download/end`). */
  size: number;
  /** The file's (or directory's) permission bits, 0-0o7777. */
  mode: number;
  version: string;
  maxChunkBytes: number;
  /** Opens one transfer stream for this download (in place of chunks): a secret, good once. */
  streamToken: string;
}

/**
 * `fs/download/end`'s answer. For a tar download whose archive was sent whole: its size and
 * SHA-256 (absent when the stream was cut), for the client to check what it received.
 */
export interface FsDownloadEndResult {
  ended: boolean;
  bytes?: number;
  sha256?: string;
}

/** `fs/download/chunk`'s answer. */
export interface FsDownloadChunkResult {
  data: string;
  bytes: number;
  eof: boolean;
}

/** One change a watch saw; `overflow` (no path) means events were dropped: look again. */
export interface FsChangeEvent {
  path?: string;
  kind: 'created' | 'modified' | 'removed' | 'overflow';
}

/** `fs/changed` params. */
export interface FsChangedParams {
  watchId: string;
  events: FsChangeEvent[];
}

const rule = {
  path: `must be a non-empty path of at most ${MAX_FS_PATH_LENGTH} characters without NUL`,
  offset: 'must be a non-negative integer',
  data: `must be base64 of at most ${MAX_FS_DATA_BYTES} bytes`,
};

const fsPath = (z: Zod) =>
  z
    .string({ error: rule.path })
    .min(1, { error: rule.path })
    .max(MAX_FS_PATH_LENGTH, { error: rule.path })
    .refine(hasNoNul, { error: rule.path });

const offset = (z: Zod) =>
  z
    .number({ error: rule.offset })
    .int({ error: rule.offset })
    .nonnegative({ error: rule.offset })
    .max(Number.MAX_SAFE_INTEGER, { error: rule.offset });

const intRange = (z: Zod, min: number, max: number) => {
  const text = `must be an integer from ${min} to ${max}`;
  return z.number({ error: text }).int({ error: text }).min(min, { error: text }).max(max, { error: text });
};

const readLength = (z: Zod) => intRange(z, 1, MAX_FS_DATA_BYTES);

/** Base64 (standard alphabet, padded) of at most `MAX_FS_DATA_BYTES` decoded bytes. */
const base64Data = (z: Zod) =>
  z
    .string({ error: rule.data })
    .max(Math.ceil(MAX_FS_DATA_BYTES / 3) * 4, { error: rule.data })
    .refine((text) => text.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(text), { error: rule.data });

const fileMode = (z: Zod) => intRange(z, 0, 0o7777);
const bool = (z: Zod) => z.boolean({ error: 'must be a boolean' });
const ifMatch = (z: Zod) =>
  z
    .string({ error: `must be a version string or '${IF_ABSENT}'` })
    .min(1, { error: `must be a version string or '${IF_ABSENT}'` })
    .max(256, { error: 'must be at most 256 characters' });
const transferId = (z: Zod) =>
  z
    .string({ error: 'must be a transfer id' })
    .regex(/^(up|down)-\d{1,15}$/, { error: 'must look like up-<n> or down-<n>' });

const format = (z: Zod) => z.enum(['file', 'tar'], { error: "must be 'file' or 'tar'" });

const sessionPath = (z: Zod) => z.strictObject({ sessionId: sessionIdSchema(), path: fsPath(z) });

/** `fs/stat`: `lstat` of one path. */
export const FsStat = request<FsStatResult>()('fs/stat', sessionPath);

/** `fs/list`: a directory's entries, sorted, to `depth` levels, never into a symlinked directory. */
export const FsList = request<FsListResult>()('fs/list', (z) =>
  sessionPath(z).extend({
    depth: intRange(z, 1, MAX_FS_LIST_DEPTH).optional(),
    limit: intRange(z, 1, MAX_FS_LIST_LIMIT).optional(),
    cursor: z.string({ error: 'must be a cursor from an earlier page' }).max(MAX_FS_PATH_LENGTH).optional(),
  }),
);

/** `fs/read`: up to `length` bytes from `offset`. */
export const FsRead = request<FsReadResult>()('fs/read', (z) =>
  sessionPath(z).extend({ offset: offset(z).optional(), length: readLength(z).optional() }),
);

/** `fs/write`: replace atomically (or `append`), optionally only when `ifMatch` holds. */
export const FsWrite = keyed<FsWriteResult>()('fs/write', (z) =>
  sessionPath(z).extend({
    data: base64Data(z),
    mode: fileMode(z).optional(),
    createParents: bool(z).optional(),
    ifMatch: ifMatch(z).optional(),
    append: bool(z).optional(),
  }),
);

/** `fs/mkdir`: one directory, or every missing one with `parents`. */
export const FsMkdir = keyed<Record<string, never>>()('fs/mkdir', (z) =>
  sessionPath(z).extend({ parents: bool(z).optional() }),
);

/** `fs/remove`: a file, a symlink (never its target), or a directory (`recursive` when not empty). */
export const FsRemove = keyed<{ removed: boolean }>()('fs/remove', (z) =>
  sessionPath(z).extend({ recursive: bool(z).optional() }),
);

/** `fs/move`: rename; `overwrite` replaces an existing target. */
export const FsMove = keyed<Record<string, never>>()('fs/move', (z) =>
  z.strictObject({ sessionId: sessionIdSchema(), from: fsPath(z), to: fsPath(z), overwrite: bool(z).optional() }),
);

/** `fs/watch`: `fs/changed` notifications for `path` (and below it with `recursive`). */
export const FsWatch = request<{ watchId: string }>()('fs/watch', (z) =>
  sessionPath(z).extend({ recursive: bool(z).optional() }),
);

/** `fs/unwatch`: no more notifications of that watch. */
export const FsUnwatch = request<{ unwatched: boolean }>()('fs/unwatch', (z) =>
  z.strictObject({
    sessionId: sessionIdSchema(),
    watchId: z.string({ error: 'must be a watch id' }).regex(/^watch-\d{1,15}$/, { error: 'must look like watch-<n>' }),
  }),
);

/**
 * `fs/upload/begin`: a temp file beside `path`; nothing is visible at `path` until commit. With
 * `format: 'tar'`, `path` is a directory the archive becomes (a staging directory beside it until
 * commit); an existing `path` is `FS_EXISTS` unless `overwrite`, which replaces it whole.
 */
export const FsUploadBegin = request<FsUploadBeginResult>()('fs/upload/begin', (z) =>
  sessionPath(z)
    .extend({
      mode: fileMode(z).optional(),
      createParents: bool(z).optional(),
      ifMatch: ifMatch(z).optional(),
      format: format(z).optional(),
      overwrite: bool(z).optional(),
    })
    .refine((params) => params.format === 'tar' || params.overwrite === undefined, {
      error: 'only a tar upload takes overwrite (a file upload replaces its target; ifMatch makes it conditional)',
      path: ['overwrite'],
    })
    .refine((params) => params.format !== 'tar' || (params.mode === undefined && params.ifMatch === undefined), {
      error: 'a tar upload takes neither mode nor ifMatch (each entry carries its mode)',
      path: ['format'],
    }),
);

/** `fs/upload/chunk`: bytes at `offset`, which must be where the previous chunk ended. */
export const FsUploadChunk = request<{ received: number }>()('fs/upload/chunk', (z) =>
  z.strictObject({ sessionId: sessionIdSchema(), uploadId: transferId(z), offset: offset(z), data: base64Data(z) }),
);

/** `fs/upload/commit`: fsync and rename into place; `size`/`sha256`, when given, must match what arrived. */
export const FsUploadCommit = request<FsUploadCommitResult>()('fs/upload/commit', (z) =>
  z.strictObject({
    sessionId: sessionIdSchema(),
    uploadId: transferId(z),
    size: offset(z).optional(),
    sha256: z
      .string({ error: 'must be 64 hex digits' })
      .regex(/^[0-9a-f]{64}$/, { error: 'must be 64 lowercase hex digits' })
      .optional(),
  }),
);

/** `fs/upload/abort`: drop the temp file; the target is untouched. */
export const FsUploadAbort = request<{ aborted: boolean }>()('fs/upload/abort', (z) =>
  z.strictObject({ sessionId: sessionIdSchema(), uploadId: transferId(z) }),
);

/**
 * `fs/download/begin`: open the file; chunks read that open file even if `path` is replaced
 * meanwhile. With `format: 'tar'`, `path` is a directory, archived as its transfer stream walks it.
 */
export const FsDownloadBegin = request<FsDownloadBeginResult>()('fs/download/begin', (z) =>
  sessionPath(z).extend({ format: format(z).optional() }),
);

/** `fs/download/chunk`: up to `length` bytes from `offset` of the opened file. */
export const FsDownloadChunk = request<FsDownloadChunkResult>()('fs/download/chunk', (z) =>
  z.strictObject({
    sessionId: sessionIdSchema(),
    downloadId: transferId(z),
    offset: offset(z),
    length: readLength(z).optional(),
  }),
);

/** `fs/download/end`: close the opened file (or directory). */
export const FsDownloadEnd = request<FsDownloadEndResult>()('fs/download/end', (z) =>
  z.strictObject({ sessionId: sessionIdSchema(), downloadId: transferId(z) }),
);

/** Every file method, for `ALL_REQUESTS`. */
export const FS_REQUESTS = [
  FsStat,
  FsList,
  FsRead,
  FsWrite,
  FsMkdir,
  FsRemove,
  FsMove,
  FsWatch,
  FsUnwatch,
  FsUploadBegin,
  FsUploadChunk,
  FsUploadCommit,
  FsUploadAbort,
  FsDownloadBegin,
  FsDownloadChunk,
  FsDownloadEnd,
] as const;

/** `fs/changed`: daemon → the connection that asked for the watch. */
export const FsChanged = new NotificationType<FsChangedParams>('fs/changed');
