/**
 * `client.fs.uploadTree` and `downloadTree` (docs/files.md): a directory tree as one tar archive over a
 * transfer stream, links kept as links and modes kept. An upload packs the local tree as it walks
 * it (`shared/tree-pack.ts`) and commits with the archive's size and SHA-256, so the daemon
 * renames its staging directory into place only when exactly what was packed arrived. A download
 * unpacks into a staging directory beside the local target with the same care as the daemon takes
 * (`shared/tree-unpack.ts`: no absolute names, no `..`, never through a symlink), checks the
 * archive's size and SHA-256 against the daemon's, and only then renames it into place.
 */
import { createHash, randomBytes } from 'node:crypto';
import { lstat, mkdir, rename, rm, unlink } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { basename, dirname, join, resolve } from 'node:path';
import { pack as tarPack } from 'tar-stream';
import {
  FsDownloadBegin,
  FsDownloadEnd,
  FsUploadAbort,
  FsUploadBegin,
  FsUploadCommit,
  MAX_TRANSFER_STREAM_PREAMBLE,
  TAR_STREAM_ANSWER,
  transferStreamPreamble,
  type FsUploadCommitResult,
} from '../protocol/fs.js';
import { drained } from '../shared/byte-pump.js';
import { DIR_NOFOLLOW, openDirectory } from '../shared/fd-path.js';
import { packTree, pumpArchive } from '../shared/tree-pack.js';
import type { TreeLimits } from '../shared/tree-rules.js';
import { TarUnpackStream, TreeUnpacker } from '../shared/tree-unpack.js';
import type { FsCaller } from './fs.js';
import { answerOf } from './transfer-stream.js';

/** Options of `uploadTree` and `downloadTree`. */
export interface TreeTransferOptions {
  sessionId: string;
  /** Bytes of the archive moved so far. */
  onProgress?: (bytes: number) => void;
  /** Replace the target when it exists (else the daemon answers `FS_EXISTS`, or the download fails). */
  overwrite?: boolean;
}

/** Options of `uploadTree`. */
export interface UploadTreeOptions extends TreeTransferOptions {
  /** Upload what symlinks point to instead of the links (`execd cp -L`). */
  follow?: boolean;
  /** Make the missing parents of the remote directory. */
  createParents?: boolean;
}

/** Options of `downloadTree`. */
export interface DownloadTreeOptions extends TreeTransferOptions {
  /** Bounds of the archive unpacked locally (default: none beyond the disk). */
  limits?: Partial<TreeLimits>;
}

/** What a tree transfer moved: the archive's size and SHA-256, and its entries. */
export interface TreeTransferResult {
  bytes: number;
  sha256: string;
  entries: number;
}

function streamOf(caller: FsCaller): () => Promise<Socket> {
  if (!caller.openStream) throw new Error('a tree transfer needs a transfer stream, which this connection cannot open');
  return caller.openStream;
}

/** Uploads the local directory `localDir` as the daemon's `remoteDir`. */
export async function uploadTree(
  caller: FsCaller,
  localDir: string,
  remoteDir: string,
  options: UploadTreeOptions,
): Promise<FsUploadCommitResult> {
  const { sessionId } = options;
  const openStream = streamOf(caller);
  const root = await openDirectory(localDir);
  try {
    const { uploadId, streamToken } = await caller.call(FsUploadBegin, {
      sessionId,
      path: remoteDir,
      format: 'tar',
      overwrite: options.overwrite,
      createParents: options.createParents,
    });
    const hash = createHash('sha256');
    let bytes = 0;
    let failure: unknown;
    let socket: Socket | undefined;
    try {
      socket = await openStream();
      socket.on('error', () => {}); // a refusal hangs up: the answer says why
      const answer = answerOf(socket);
      const pack = tarPack();
      const packed = packTree(root, pack, { follow: options.follow }).then(
        () => pack.finalize(),
        (error: unknown) => {
          pack.destroy(error as Error);
          throw error;
        },
      );
      packed.catch(() => {});
      try {
        socket.write(transferStreamPreamble(streamToken, 0));
        const stream = socket;
        await pumpArchive(
          pack,
          async (batch) => {
            if (!stream.write(batch)) await drained(stream);
            options.onProgress?.(bytes);
          },
          (batch) => {
            bytes += batch.length;
            hash.update(batch);
          },
        );
        await packed;
        socket.end();
      } catch (error) {
        failure = error;
        pack.destroy();
        socket.destroySoon();
        // The walk stops at its next entry; the directory stays open until it has.
        await packed.catch(() => {});
      }
      const line = await answer;
      // The daemon's own reason, if it gave one, says more than a broken pipe.
      if (line.startsWith('error ') && failure !== undefined)
        failure = new Error(`the daemon refused the archive: ${line.slice(6)}`);
    } catch (error) {
      failure ??= error;
    } finally {
      socket?.destroy();
    }
    if (failure !== undefined) {
      // An archive not sent whole is never committed (a cut at an entry boundary looks whole).
      await caller.call(FsUploadAbort, { sessionId, uploadId }).catch(() => {});
      throw failure instanceof Error ? failure : new Error('the archive could not be sent whole');
    }
    // Sent whole: commit checks size and SHA-256, and answers a refusal as its error value.
    return await caller.call(FsUploadCommit, { sessionId, uploadId, size: bytes, sha256: hash.digest('hex') });
  } finally {
    await root.handle.close();
  }
}

const exists = (path: string) =>
  lstat(path).then(
    (stats) => stats,
    () => undefined,
  );

/** Downloads the daemon's directory `remoteDir` as the local `localDir`. */
export async function downloadTree(
  caller: FsCaller,
  remoteDir: string,
  localDir: string,
  options: DownloadTreeOptions,
): Promise<TreeTransferResult> {
  const { sessionId } = options;
  const openStream = streamOf(caller);
  const target = resolve(localDir);
  if (!options.overwrite && (await exists(target))) throw new Error(`${localDir} already exists`);
  const { downloadId, streamToken } = await caller.call(FsDownloadBegin, { sessionId, path: remoteDir, format: 'tar' });
  let ended = false;
  const staging = join(dirname(target), `.${basename(target)}.execd-${randomBytes(6).toString('hex')}.tmp`);
  try {
    await mkdir(staging, { mode: 0o700 });
    const root = await openDirectory(staging, DIR_NOFOLLOW);
    const unlimited = Number.MAX_SAFE_INTEGER;
    const unpacker = new TreeUnpacker(root, {
      maxEntries: options.limits?.maxEntries ?? unlimited,
      maxFileBytes: options.limits?.maxFileBytes ?? unlimited,
      maxTotalBytes: options.limits?.maxTotalBytes ?? unlimited,
    });
    let received: { bytes: number; sha256: string };
    try {
      const socket = await openStream();
      try {
        received = await receiveArchive(socket, streamToken, new TarUnpackStream(unpacker), options.onProgress);
      } finally {
        socket.destroy();
      }
      await unpacker.finish();
    } finally {
      await unpacker.close();
      await root.handle.close();
    }
    const sent = await caller.call(FsDownloadEnd, { sessionId, downloadId });
    ended = true;
    if (sent.bytes !== received.bytes || sent.sha256 !== received.sha256)
      throw new Error(`${remoteDir}: the archive did not arrive whole (${received.bytes} bytes received)`);
    await replaceWith(staging, target);
    return { ...received, entries: unpacker.entries };
  } catch (error) {
    await rm(staging, { recursive: true, force: true }).catch(() => {});
    throw error;
  } finally {
    if (!ended) await caller.call(FsDownloadEnd, { sessionId, downloadId }).catch(() => {});
  }
}

/** Reads the daemon's answer line, then unpacks the archive that follows until it hangs up. */
async function receiveArchive(
  socket: Socket,
  token: string,
  archive: TarUnpackStream,
  onProgress?: (bytes: number) => void,
): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash('sha256');
  let bytes = 0;
  let head: Buffer | undefined = Buffer.alloc(0);
  try {
    socket.write(transferStreamPreamble(token, 0));
    for await (const chunk of socket) {
      let piece = chunk as Buffer;
      if (head !== undefined) {
        head = Buffer.concat([head, piece]);
        const newline = head.indexOf(0x0a);
        if (newline < 0) {
          if (head.length > MAX_TRANSFER_STREAM_PREAMBLE) throw new Error('the daemon sent no answer line');
          continue;
        }
        const line = head.subarray(0, newline).toString('utf8');
        if (line !== TAR_STREAM_ANSWER)
          throw new Error(`the daemon refused the transfer stream: ${line.replace(/^error /, '')}`);
        piece = head.subarray(newline + 1);
        head = undefined;
      }
      bytes += piece.length;
      hash.update(piece);
      await archive.write(piece);
      onProgress?.(bytes);
    }
    if (head !== undefined) throw new Error('the transfer stream closed before the daemon answered');
    await archive.end();
  } catch (error) {
    archive.destroy(error as Error);
    throw error;
  }
  return { bytes, sha256: hash.digest('hex') };
}

/** Puts the unpacked `staging` in `target`'s place; an existing tree there goes once the new one is in. */
async function replaceWith(staging: string, target: string): Promise<void> {
  const existing = await exists(target);
  if (!existing) return rename(staging, target);
  if (!existing.isDirectory()) {
    await unlink(target);
    return rename(staging, target);
  }
  const aside = `${staging}.old`;
  await rename(target, aside);
  await rename(staging, target);
  await rm(aside, { recursive: true, force: true });
}
