/** Result and notification schemas of the file methods (docs/files.md), for `execd schema`. */
import type { z } from 'zod';
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
  type FsChangedParams,
} from './fs.js';
import type { AnyRequestDecl, ResultOf } from './request.js';
import type { Zod } from './zod.js';

/** A result schema checked against its method's declared result type. */
interface FsResultEntry {
  decl: AnyRequestDecl;
  build: (z: Zod) => z.ZodType;
}

function result<D extends AnyRequestDecl>(decl: D, build: (z: Zod) => z.ZodType<ResultOf<D>>): FsResultEntry {
  return { decl, build };
}

const entryType = (z: Zod) => z.enum(['file', 'directory', 'symlink', 'other']);
const written = (z: Zod) => ({ version: z.string(), size: z.number() });

/** The file methods' result schemas; built on first use like every schema. */
export const fsResultEntries = (): FsResultEntry[] => [
  result(FsStat, (z) =>
    z.object({
      path: z.string(),
      type: entryType(z),
      size: z.number(),
      mode: z.number(),
      mtimeMs: z.number(),
      version: z.string(),
    }),
  ),
  result(FsList, (z) =>
    z.object({
      entries: z.array(z.object({ path: z.string(), type: entryType(z), size: z.number(), mtimeMs: z.number() })),
      nextCursor: z.string().optional(),
    }),
  ),
  result(FsRead, (z) =>
    z.object({ data: z.string(), bytes: z.number(), eof: z.boolean(), size: z.number(), version: z.string() }),
  ),
  result(FsWrite, (z) => z.object(written(z))),
  result(FsMkdir, (z) => z.strictObject({})),
  result(FsRemove, (z) => z.object({ removed: z.boolean() })),
  result(FsMove, (z) => z.strictObject({})),
  result(FsWatch, (z) => z.object({ watchId: z.string() })),
  result(FsUnwatch, (z) => z.object({ unwatched: z.boolean() })),
  result(FsUploadBegin, (z) => z.object({ uploadId: z.string(), maxChunkBytes: z.number(), streamToken: z.string() })),
  result(FsUploadChunk, (z) => z.object({ received: z.number() })),
  result(FsUploadCommit, (z) => z.object({ ...written(z), sha256: z.string(), entries: z.number().optional() })),
  result(FsUploadAbort, (z) => z.object({ aborted: z.boolean() })),
  result(FsDownloadBegin, (z) =>
    z.object({
      downloadId: z.string(),
      size: z.number(),
      mode: z.number(),
      version: z.string(),
      maxChunkBytes: z.number(),
      streamToken: z.string(),
    }),
  ),
  result(FsDownloadChunk, (z) => z.object({ data: z.string(), bytes: z.number(), eof: z.boolean() })),
  result(FsDownloadEnd, (z) =>
    z.object({ ended: z.boolean(), bytes: z.number().optional(), sha256: z.string().optional() }),
  ),
];

/** `fs/changed` params. */
export const fsChangedSchema = (z: Zod): z.ZodType<FsChangedParams> =>
  z.object({
    watchId: z.string(),
    events: z.array(
      z.object({ path: z.string().optional(), kind: z.enum(['created', 'modified', 'removed', 'overflow']) }),
    ),
  });
