/**
 * `client.fs`: the file methods of docs/files.md with their own types, and `upload`/`download`, which
 * move a file of any size. By default the bytes go raw over a transfer stream, a connection of
 * their own (client/transfer-stream.ts); with `stream: false`, or a caller that cannot open one,
 * they go in chunk requests, `window` of them in flight: enough to keep the link busy, few enough
 * that memory on both ends stays a few chunks whatever the file's size.
 * A download lands in a temp file beside its target and is renamed into place once every byte
 * arrived and the size matched; an upload is renamed into place by the daemon at commit, after the
 * daemon checked the size and SHA-256 of what arrived. A downloaded file takes the remote file's
 * permission bits. `uploadTree`/`downloadTree` move a directory as one tar archive (`fs-tree.ts`).
 */
import { createHash, randomBytes, type Hash } from 'node:crypto';
import { chmod, open, rename, unlink, type FileHandle } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { basename, dirname, join } from 'node:path';
import type { Disposable } from 'vscode-jsonrpc/node.js';
import {
  FsChanged,
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
  type FsUploadCommitResult,
} from '../protocol/fs.js';
import type { AnyRequestDecl, ParamsOf, ResultOf } from '../protocol/request.js';
import type { NotificationType } from 'vscode-jsonrpc/node.js';
import {
  downloadTree,
  uploadTree,
  type DownloadTreeOptions,
  type TreeTransferResult,
  type UploadTreeOptions,
} from './fs-tree.js';
import { receiveOverStream, sendOverStream } from './transfer-stream.js';

/** What `FsClient` needs of a connection. */
export interface FsCaller {
  call<D extends AnyRequestDecl>(decl: D, params: ParamsOf<D>): Promise<ResultOf<D>>;
  onNotification<P>(type: NotificationType<P>, listener: (params: P) => void): Disposable;
  /** A new socket to the same daemon for a transfer stream; without it transfers use chunks. */
  readonly openStream?: (() => Promise<Socket>) | undefined;
}

/**
 * Default chunk of `upload`/`download`: 64 KiB decoded. Measured on loopback, small chunks with a
 * deep window move faster than large ones (64 KiB x 32: ~25-33 MiB/s each way; 2 MiB x 4: 5-19
 * MiB/s), since a large frame is buffered and parsed whole on both ends; 32 of them in flight
 * (2.7 MiB of base64) stay far below the daemon's default `maxUnsentBytes`.
 */
export const DEFAULT_TRANSFER_CHUNK_BYTES = 64 * 1024;
/** Default chunk requests in flight. */
export const DEFAULT_TRANSFER_WINDOW = 32;

/** Options of `upload` and `download`. */
export interface TransferOptions {
  sessionId: string;
  /** Bytes moved so far and the total, after every chunk. */
  onProgress?: (done: number, total: number) => void;
  /** False: chunk requests on this connection instead of a transfer stream. */
  stream?: boolean;
  /** Chunk size and requests in flight, when chunks are used. */
  chunkBytes?: number;
  window?: number;
}

/** Options of `upload`. */
export interface UploadOptions extends TransferOptions {
  mode?: number;
  createParents?: boolean;
  ifMatch?: string;
}

/** The file methods of one connection. */
export class FsClient {
  constructor(private readonly conn: FsCaller) {}

  /** `fs/stat`. */
  stat(params: ParamsOf<typeof FsStat>): Promise<ResultOf<typeof FsStat>> {
    return this.conn.call(FsStat, params);
  }
  /** `fs/list`. */
  list(params: ParamsOf<typeof FsList>): Promise<ResultOf<typeof FsList>> {
    return this.conn.call(FsList, params);
  }
  /** `fs/read`. */
  read(params: ParamsOf<typeof FsRead>): Promise<ResultOf<typeof FsRead>> {
    return this.conn.call(FsRead, params);
  }
  /** `fs/write`. */
  write(params: ParamsOf<typeof FsWrite>): Promise<ResultOf<typeof FsWrite>> {
    return this.conn.call(FsWrite, params);
  }
  /** `fs/mkdir`. */
  mkdir(params: ParamsOf<typeof FsMkdir>): Promise<ResultOf<typeof FsMkdir>> {
    return this.conn.call(FsMkdir, params);
  }
  /** `fs/remove`. */
  remove(params: ParamsOf<typeof FsRemove>): Promise<ResultOf<typeof FsRemove>> {
    return this.conn.call(FsRemove, params);
  }
  /** `fs/move`. */
  move(params: ParamsOf<typeof FsMove>): Promise<ResultOf<typeof FsMove>> {
    return this.conn.call(FsMove, params);
  }
  /** `fs/watch`; `fs/changed` notifications of that watch go to `listener` until `unwatch`. */
  async watch(
    params: ParamsOf<typeof FsWatch>,
    listener: (params: FsChangedParams) => void,
  ): Promise<{ watchId: string; unwatch: () => Promise<boolean> }> {
    // Subscribed first: a change right after the answer may come before the next tick.
    let watchId: string | undefined;
    const early: FsChangedParams[] = [];
    const subscription = this.conn.onNotification(FsChanged, (changed) => {
      if (watchId === undefined) early.push(changed);
      else if (changed.watchId === watchId) listener(changed);
    });
    try {
      ({ watchId } = await this.conn.call(FsWatch, params));
    } catch (error) {
      subscription.dispose();
      throw error;
    }
    for (const changed of early) if (changed.watchId === watchId) listener(changed);
    const id = watchId;
    return {
      watchId: id,
      unwatch: async () => {
        subscription.dispose();
        return (await this.unwatch({ sessionId: params.sessionId, watchId: id })).unwatched;
      },
    };
  }
  /** `fs/unwatch`. */
  unwatch(params: ParamsOf<typeof FsUnwatch>): Promise<ResultOf<typeof FsUnwatch>> {
    return this.conn.call(FsUnwatch, params);
  }
  /** Subscribes to every `fs/changed` on this connection. */
  onChanged(listener: (params: FsChangedParams) => void): Disposable {
    return this.conn.onNotification(FsChanged, listener);
  }

  /**
   * Uploads the local directory `localDir` as the daemon's `remoteDir`, one tar archive over a
   * transfer stream: links stay links (`follow` uploads their targets), modes are kept, and the
   * tree appears whole at commit or not at all. An existing `remoteDir` needs `overwrite`.
   */
  uploadTree(localDir: string, remoteDir: string, options: UploadTreeOptions): Promise<FsUploadCommitResult> {
    return uploadTree(this.conn, localDir, remoteDir, options);
  }

  /**
   * Downloads the daemon's directory `remoteDir` as the local `localDir` (links kept, modes kept),
   * unpacked beside it and renamed into place once the whole archive arrived. An existing
   * `localDir` needs `overwrite`.
   */
  downloadTree(remoteDir: string, localDir: string, options: DownloadTreeOptions): Promise<TreeTransferResult> {
    return downloadTree(this.conn, remoteDir, localDir, options);
  }

  /** Uploads the local file `local` to the daemon's `remote`, replacing it atomically at the end. */
  async upload(local: string, remote: string, options: UploadOptions): Promise<FsUploadCommitResult> {
    const { sessionId } = options;
    const file = await open(local, 'r');
    try {
      const total = (await file.stat()).size;
      const { uploadId, streamToken } = await this.conn.call(FsUploadBegin, {
        sessionId,
        path: remote,
        mode: options.mode,
        createParents: options.createParents,
        ifMatch: options.ifMatch,
      });
      const hash = createHash('sha256');
      try {
        const streamed = await this.overStream(options, (socket) =>
          sendOverStream(socket, streamToken, file, total, hash, options.onProgress),
        );
        if (!streamed) await this.sendChunks(file, total, uploadId, hash, options);
      } catch (error) {
        await this.conn.call(FsUploadAbort, { sessionId, uploadId }).catch(() => {});
        throw error;
      }
      return await this.conn.call(FsUploadCommit, { sessionId, uploadId, size: total, sha256: hash.digest('hex') });
    } finally {
      await file.close();
    }
  }

  /**
   * Moves a transfer's bytes with `move` over a transfer stream of its own; false, without trying,
   * when the options say `stream: false` or this caller cannot open one (then chunks are used).
   */
  private async overStream(options: TransferOptions, move: (socket: Socket) => Promise<void>): Promise<boolean> {
    const openStream = options.stream === false ? undefined : this.conn.openStream;
    if (!openStream) return false;
    const socket = await openStream();
    try {
      await move(socket);
    } finally {
      socket.destroy();
    }
    return true;
  }

  /** The chunked upload: `window` `fs/upload/chunk` requests in flight. */
  private async sendChunks(
    file: FileHandle,
    total: number,
    uploadId: string,
    hash: Hash,
    options: UploadOptions,
  ): Promise<void> {
    const { sessionId } = options;
    const chunkBytes = options.chunkBytes ?? DEFAULT_TRANSFER_CHUNK_BYTES;
    const window = Math.max(1, options.window ?? DEFAULT_TRANSFER_WINDOW);
    const inFlight: Array<Promise<unknown>> = [];
    let offset = 0;
    let done = 0;
    try {
      while (offset < total) {
        const buffer = Buffer.allocUnsafe(Math.min(chunkBytes, total - offset));
        const { bytesRead } = await file.read(buffer, 0, buffer.length, offset);
        if (bytesRead === 0) break;
        const bytes = buffer.subarray(0, bytesRead);
        hash.update(bytes);
        const chunk = this.conn
          .call(FsUploadChunk, { sessionId, uploadId, offset, data: bytes.toString('base64') })
          .then(() => {
            done += bytesRead;
            options.onProgress?.(done, total);
          });
        offset += bytesRead;
        inFlight.push(chunk);
        if (inFlight.length >= window) await inFlight.shift();
      }
      await Promise.all(inFlight);
    } catch (error) {
      await Promise.allSettled(inFlight);
      throw error;
    }
    if (offset !== total) throw new Error(`the file shrank to ${offset} bytes while it was sent (${total} expected)`);
  }

  /**
   * Downloads the daemon's `remote` to the local file `local`: one version of it (the daemon holds
   * the file it opened), in a temp file renamed into place when complete. Returns size and SHA-256.
   */
  async download(local: string, remote: string, options: TransferOptions): Promise<{ size: number; sha256: string }> {
    const { sessionId } = options;
    const begun = await this.conn.call(FsDownloadBegin, { sessionId, path: remote });
    const { downloadId, size, streamToken } = begun;
    const temp = join(dirname(local), `.${basename(local)}.execd-${randomBytes(6).toString('hex')}.tmp`);
    const hash = createHash('sha256');
    try {
      const file = await open(temp, 'wx', 0o600);
      try {
        const streamed = await this.overStream(options, (socket) =>
          receiveOverStream(socket, streamToken, file, size, hash, options.onProgress),
        );
        if (!streamed) await this.receiveChunks(file, size, downloadId, remote, hash, options);
        await file.sync();
      } finally {
        await file.close();
      }
      // The remote file's permission bits (never setuid/setgid on this side).
      await chmod(temp, begun.mode & 0o1777);
      await rename(temp, local);
      return { size, sha256: hash.digest('hex') };
    } catch (error) {
      await unlink(temp).catch(() => {});
      throw error;
    } finally {
      await this.conn.call(FsDownloadEnd, { sessionId, downloadId }).catch(() => {});
    }
  }

  /** The chunked download: `window` `fs/download/chunk` requests in flight. */
  private async receiveChunks(
    file: FileHandle,
    size: number,
    downloadId: string,
    remote: string,
    hash: Hash,
    options: TransferOptions,
  ): Promise<void> {
    const { sessionId } = options;
    const chunkBytes = options.chunkBytes ?? DEFAULT_TRANSFER_CHUNK_BYTES;
    const window = Math.max(1, options.window ?? DEFAULT_TRANSFER_WINDOW);
    const inFlight: Array<Promise<ResultOf<typeof FsDownloadChunk>>> = [];
    let requested = 0;
    let written = 0;
    const request = () => {
      const length = Math.min(chunkBytes, size - requested);
      inFlight.push(this.conn.call(FsDownloadChunk, { sessionId, downloadId, offset: requested, length }));
      requested += length;
    };
    try {
      while (requested < size && inFlight.length < window) request();
      while (inFlight.length > 0) {
        const chunk = await inFlight.shift()!;
        if (requested < size) request();
        const bytes = Buffer.from(chunk.data, 'base64');
        if (bytes.length === 0 && written < size) throw new Error(`${remote} shrank while it was read`);
        hash.update(bytes);
        await file.write(bytes, 0, bytes.length, written);
        written += bytes.length;
        options.onProgress?.(written, size);
      }
    } catch (error) {
      await Promise.allSettled(inFlight);
      throw error;
    }
    if (written !== size) throw new Error(`${remote}: ${written} bytes arrived, not ${size}`);
  }
}
