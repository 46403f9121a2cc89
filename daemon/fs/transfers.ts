/**
 * Chunked uploads and downloads (docs/files.md). An upload writes into a temp file beside its target,
 * in order, and renames it into place at commit, so a cut transfer never leaves a half-written
 * target; a download holds the file it opened, so every chunk reads one version of it. Each
 * chunk is one request, answered when its bytes are written (or read): the client's window of
 * requests in flight is the flow control, and the daemon holds at most that many chunks.
 *
 * Or the bytes move raw over a transfer stream (`TRANSFER_STREAM_PREFIX`), a connection of their
 * own that presents the transfer's `streamToken`: TCP is the flow control there, nothing is
 * encoded, and the daemon holds at most a buffer of each side. A stream on which no byte moves for
 * `fsTransferIdleMs` is cut (its transfer fails and is released with its temp files).
 *
 * A tar transfer (`format: 'tar'`, docs/files.md) moves a directory tree over its stream only; the
 * unpacking and archiving are in `tree-transfers.ts`.
 */
import { createHash, randomBytes, type Hash } from 'node:crypto';
import { unlink, type FileHandle } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import type { Config } from '../../protocol/config.js';
import { ExecdError } from '../../protocol/errors.js';
import { FileAppender, fileToSocket } from '../../shared/byte-pump.js';
import {
  DEFAULT_FS_READ_BYTES,
  FsUploadChunk,
  MAX_FS_DATA_BYTES,
  type FsDownloadBeginResult,
  type FsDownloadChunkResult,
  type FsDownloadEndResult,
  type FsTransferFormat,
  type FsUploadBeginResult,
  type FsUploadCommitResult,
} from '../../protocol/fs.js';
import type { Anchor } from './anchor.js';
import { targetOf, type FsCall } from './call.js';
import { denied, fsErrorOf } from './errno.js';
import { refusal } from './policy.js';
import { openForRead, readChunk } from './read-ops.js';
import {
  commitTree,
  discardTree,
  openTreeSource,
  receiveTree,
  sendTree,
  stageTree,
  treeErrorOf,
  type StagedTree,
  type TreeSource,
} from './tree-transfers.js';
import { forgetUpload, recordUpload } from './upload-journal.js';
import { anchorForWrite, checkIfMatch, createTemp, replaceTarget } from './write-ops.js';

/** Who may use a transfer: the connection and session that began it. */
export interface TransferOwner {
  connId: number;
  sessionId: string;
}

interface Upload {
  kind: 'upload';
  owner: TransferOwner;
  call: FsCall;
  target: string;
  anchor: Anchor;
  temp: { handle: FileHandle; at: string; real: string };
  record: string;
  mode?: number;
  ifMatch?: string;
  /** Where the next chunk must start (advanced when a chunk is accepted, before it is written). */
  nextOffset: number;
  hash: Hash;
  /** The writes so far, in order. */
  tail: Promise<void>;
  failed?: unknown;
  streamToken: string;
  /** The transfer stream, once one attached: chunks are refused from then on. */
  stream?: Socket;
}

interface Download {
  kind: 'download';
  owner: TransferOwner;
  handle: FileHandle;
  size: number;
  streamToken: string;
  stream?: Socket;
}

interface TreeUpload {
  kind: 'tree-upload';
  owner: TransferOwner;
  tree: StagedTree;
  record: string;
  /** The unpacking of the stream's archive, once a stream attached. */
  tail: Promise<void>;
  failed?: unknown;
  streamToken: string;
  stream?: Socket;
}

interface TreeDownload {
  kind: 'tree-download';
  owner: TransferOwner;
  source: TreeSource;
  streamToken: string;
  stream?: Socket;
  /** The archiving, once a stream attached: its directory stays open until it settled. */
  sending: Promise<void>;
}

type Transfer = Upload | Download | TreeUpload | TreeDownload;

/** What a chunk or stream answer says of a tar transfer's bytes. */
const TAR_OVER_STREAM = 'a tar transfer moves its bytes over its transfer stream, not in chunks';

/** The open transfers of one daemon. */
export class TransferTable {
  private readonly transfers = new Map<string, Transfer>();
  /** Transfer ids by the stream token not used yet. */
  private readonly byStreamToken = new Map<string, string>();
  private counter = 0;
  /** When each transfer was last called or moved a byte (ms), for `fsTransferIdleMs`. */
  private readonly lastActive = new Map<string, number>();
  private idleTimer: NodeJS.Timeout | undefined;

  /**
   * `config`: read at each look, so that `config/set` applies (`fsTransferIdleMs`, the tree bounds).
   * `countBytes`: told the bytes a transfer stream carried once it did (what watches the daemon,
   * `execd_fs_bytes_total`); the chunk methods are counted by their handlers.
   */
  constructor(
    private readonly journalDir: string,
    private readonly config: () => Config,
    private readonly countBytes: (direction: 'read' | 'write', bytes: number) => void = () => {},
  ) {}

  /** Open transfers. */
  get size(): number {
    return this.transfers.size;
  }

  /** Open transfers of one session, for `maxFsTransfersPerSession`. */
  countOf(sessionId: string): number {
    let n = 0;
    for (const transfer of this.transfers.values()) if (transfer.owner.sessionId === sessionId) n += 1;
    return n;
  }

  /** Marks a transfer active now, and makes sure idle ones are looked for while any is open. */
  private touch(id: string): void {
    this.lastActive.set(id, Date.now());
    if (this.idleTimer !== undefined) return;
    const period = Math.max(50, Math.min(5_000, this.config().fsTransferIdleMs / 4));
    this.idleTimer = setInterval(() => this.endIdle(), period);
    this.idleTimer.unref();
  }

  /**
   * Ends the transfers nobody called and no stream moved a byte of for `fsTransferIdleMs` (temp
   * file removed), so a client that opens transfers and walks away cannot hold the slots.
   */
  private endIdle(): void {
    const now = Date.now();
    const idleMs = this.config().fsTransferIdleMs;
    for (const [id, at] of this.lastActive) if (now - at >= idleMs) void this.release(id).catch(() => {});
    if (this.transfers.size === 0) {
      clearInterval(this.idleTimer);
      this.idleTimer = undefined;
    }
  }

  /** `fs/upload/begin`. */
  async beginUpload(
    call: FsCall,
    owner: TransferOwner,
    params: {
      path: string;
      mode?: number;
      createParents?: boolean;
      ifMatch?: string;
      format?: FsTransferFormat;
      overwrite?: boolean;
    },
  ): Promise<FsUploadBeginResult | ExecdError> {
    if (params.format === 'tar') return this.beginTreeUpload(call, owner, params);
    const target = targetOf(call, params.path);
    const anchor = await anchorForWrite(call, target, params.createParents);
    if (anchor instanceof ExecdError) return anchor;
    try {
      const conflict = await checkIfMatch(call, target, anchor.at, params.ifMatch);
      if (conflict) {
        await anchor.dir.close();
        return conflict;
      }
      const temp = await createTemp(anchor, 'upload');
      const id = `up-${++this.counter}`;
      const real = join(anchor.dirReal, temp.name);
      const record = await recordUpload(this.journalDir, id, real);
      const streamToken = this.issueStreamToken(id);
      this.transfers.set(id, {
        kind: 'upload',
        owner,
        call,
        target,
        anchor,
        temp: { ...temp, real },
        record,
        mode: params.mode,
        ifMatch: params.ifMatch,
        nextOffset: 0,
        hash: createHash('sha256'),
        tail: Promise.resolve(),
        streamToken,
      });
      this.touch(id);
      return { uploadId: id, maxChunkBytes: MAX_FS_DATA_BYTES, streamToken };
    } catch (error) {
      await anchor.dir.close();
      return fsErrorOf(call.method, target, error);
    }
  }

  /** `fs/upload/begin` with `format: 'tar'`. */
  private async beginTreeUpload(
    call: FsCall,
    owner: TransferOwner,
    params: { path: string; createParents?: boolean; overwrite?: boolean },
  ): Promise<FsUploadBeginResult | ExecdError> {
    const tree = await stageTree(call, params, this.config());
    if (tree instanceof ExecdError) return tree;
    const id = `up-${++this.counter}`;
    let record: string;
    try {
      record = await recordUpload(this.journalDir, id, tree.staging.real);
    } catch (error) {
      await discardTree(tree);
      return fsErrorOf(call.method, tree.target, error);
    }
    const streamToken = this.issueStreamToken(id);
    this.transfers.set(id, { kind: 'tree-upload', owner, tree, record, tail: Promise.resolve(), streamToken });
    return { uploadId: id, maxChunkBytes: MAX_FS_DATA_BYTES, streamToken };
  }

  private find<K extends Transfer['kind']>(
    id: string,
    kind: K,
    owner: TransferOwner,
  ): Extract<Transfer, { kind: K }> | ExecdError {
    const transfer = this.transfers.get(id);
    if (
      !transfer ||
      transfer.kind !== kind ||
      transfer.owner.connId !== owner.connId ||
      transfer.owner.sessionId !== owner.sessionId
    )
      return new ExecdError('FS_NOT_FOUND', `no ${kind} ${id} of session ${owner.sessionId} on this connection`);
    this.touch(id);
    return transfer as Extract<Transfer, { kind: K }>;
  }

  /** `fs/upload/chunk`: accepted only at the offset where the previous one ended. */
  async uploadChunk(
    owner: TransferOwner,
    params: { uploadId: string; offset: number; data: string },
  ): Promise<{ received: number } | ExecdError> {
    if (this.transfers.get(params.uploadId)?.kind === 'tree-upload')
      return new ExecdError('INVALID_PARAMS', `uploadId: ${params.uploadId} is a tar upload: ${TAR_OVER_STREAM}`);
    const upload = this.find(params.uploadId, 'upload', owner);
    if (upload instanceof ExecdError) return upload;
    if (upload.stream)
      return new ExecdError('INVALID_PARAMS', `uploadId: ${params.uploadId} takes its bytes from a transfer stream`);
    if (params.offset !== upload.nextOffset)
      return new ExecdError('INVALID_PARAMS', `offset: must be ${upload.nextOffset}, where the upload stands`);
    const bytes = Buffer.from(params.data, 'base64');
    const position = upload.nextOffset;
    upload.nextOffset += bytes.length;
    upload.tail = upload.tail.then(async () => {
      if (upload.failed) return;
      try {
        let written = 0;
        while (written < bytes.length) {
          const { bytesWritten } = await upload.temp.handle.write(
            bytes,
            written,
            bytes.length - written,
            position + written,
          );
          written += bytesWritten;
        }
        upload.hash.update(bytes);
      } catch (error) {
        upload.failed = error;
      }
    });
    await upload.tail;
    if (upload.failed) {
      // The chunk's own method: the error is this call's, not the begin's.
      const error = fsErrorOf(FsUploadChunk.method, upload.target, upload.failed);
      await this.release(params.uploadId);
      return error;
    }
    return { received: position + bytes.length };
  }

  /** `fs/upload/commit`: checks `size`/`sha256`, then replaces the target atomically. */
  async commitUpload(
    call: FsCall,
    owner: TransferOwner,
    params: { uploadId: string; size?: number; sha256?: string },
  ): Promise<FsUploadCommitResult | ExecdError> {
    const staged = this.find(params.uploadId, 'tree-upload', owner);
    if (!(staged instanceof ExecdError)) return this.commitTreeUpload(staged, params);
    const upload = this.find(params.uploadId, 'upload', owner);
    if (upload instanceof ExecdError) return upload;
    await upload.tail;
    try {
      if (upload.failed) return fsErrorOf(call.method, upload.target, upload.failed);
      // The policy now, not the one of the begin: a session narrowed meanwhile (read-only) commits nothing.
      const why = refusal(call.policy, upload.anchor.real, 'write');
      if (why) return denied(call.method, upload.target, why);
      if (params.size !== undefined && params.size !== upload.nextOffset)
        return new ExecdError('INVALID_PARAMS', `size: ${upload.nextOffset} bytes arrived, not ${params.size}`);
      const sha256 = upload.hash.digest('hex');
      if (params.sha256 !== undefined && params.sha256 !== sha256)
        return new ExecdError('INVALID_PARAMS', `sha256: what arrived hashes to ${sha256}, not ${params.sha256}`);
      const outcome = await replaceTarget(call, upload.target, upload.anchor, upload.temp, upload);
      if (outcome instanceof ExecdError) return outcome;
      upload.temp.at = '';
      return { ...outcome, sha256 };
    } catch (error) {
      return fsErrorOf(call.method, upload.target, error);
    } finally {
      await this.release(params.uploadId);
    }
  }

  /** `fs/upload/commit` of a tar upload: once the stream's archive landed whole, it takes the target's place. */
  private async commitTreeUpload(
    upload: TreeUpload,
    params: { uploadId: string; size?: number; sha256?: string },
  ): Promise<FsUploadCommitResult | ExecdError> {
    await upload.tail;
    try {
      if (upload.failed) return treeErrorOf(upload.tree, upload.failed);
      return await commitTree(upload.tree, params);
    } catch (error) {
      return treeErrorOf(upload.tree, error);
    } finally {
      await this.release(params.uploadId);
    }
  }

  /** `fs/upload/abort`. */
  async abortUpload(owner: TransferOwner, uploadId: string): Promise<{ aborted: boolean }> {
    const upload = this.transfers.get(uploadId);
    if (
      (upload?.kind !== 'upload' && upload?.kind !== 'tree-upload') ||
      upload.owner.connId !== owner.connId ||
      upload.owner.sessionId !== owner.sessionId
    )
      return { aborted: false };
    await this.release(uploadId);
    return { aborted: true };
  }

  /** `fs/download/begin`. */
  async beginDownload(
    call: FsCall,
    owner: TransferOwner,
    params: { path: string; format?: FsTransferFormat },
  ): Promise<FsDownloadBeginResult | ExecdError> {
    if (params.format === 'tar') {
      const opened = await openTreeSource(call, params.path);
      if (opened instanceof ExecdError) return opened;
      const id = `down-${++this.counter}`;
      const streamToken = this.issueStreamToken(id);
      this.transfers.set(id, {
        kind: 'tree-download',
        owner,
        source: opened.source,
        streamToken,
        sending: Promise.resolve(),
      });
      const { mode, version } = opened;
      return { downloadId: id, size: 0, mode, version, maxChunkBytes: MAX_FS_DATA_BYTES, streamToken };
    }
    const opened = await openForRead(call, params.path);
    if (opened instanceof ExecdError) return opened;
    const id = `down-${++this.counter}`;
    const streamToken = this.issueStreamToken(id);
    this.transfers.set(id, { kind: 'download', owner, handle: opened.handle, size: opened.size, streamToken });
    this.touch(id);
    return {
      downloadId: id,
      size: opened.size,
      mode: opened.mode,
      version: opened.version,
      maxChunkBytes: MAX_FS_DATA_BYTES,
      streamToken,
    };
  }

  /** `fs/download/chunk`: reads the opened file; the size is the one it had when opened. */
  async downloadChunk(
    owner: TransferOwner,
    params: { downloadId: string; offset: number; length?: number },
  ): Promise<FsDownloadChunkResult | ExecdError> {
    if (this.transfers.get(params.downloadId)?.kind === 'tree-download')
      return new ExecdError('INVALID_PARAMS', `downloadId: ${params.downloadId} is a tar download: ${TAR_OVER_STREAM}`);
    const download = this.find(params.downloadId, 'download', owner);
    if (download instanceof ExecdError) return download;
    const length = Math.max(0, Math.min(params.length ?? DEFAULT_FS_READ_BYTES, download.size - params.offset));
    const { data, bytes } = await readChunk(download.handle, params.offset, length);
    return { data, bytes, eof: params.offset + bytes >= download.size };
  }

  /** `fs/download/end`. */
  async endDownload(owner: TransferOwner, downloadId: string): Promise<FsDownloadEndResult> {
    const tree = this.find(downloadId, 'tree-download', owner);
    if (!(tree instanceof ExecdError)) {
      const sent = tree.source.sent;
      await this.release(downloadId);
      return sent ? { ended: true, ...sent } : { ended: true };
    }
    const download = this.find(downloadId, 'download', owner);
    if (download instanceof ExecdError) return { ended: false };
    await this.release(downloadId);
    return { ended: true };
  }

  private issueStreamToken(id: string): string {
    const token = randomBytes(32).toString('base64url');
    this.byStreamToken.set(token, id);
    return token;
  }

  /**
   * A transfer stream presented `token`: its transfer takes the socket (once), an upload reading
   * exactly `bytes` from it, a download writing the opened file to it. Returns why not, if not.
   */
  attachStream(preamble: { token: string; bytes: number; rest: Buffer }, socket: Socket): string | undefined {
    const id = this.byStreamToken.get(preamble.token);
    const transfer = id === undefined ? undefined : this.transfers.get(id);
    if (!transfer) return 'no open transfer has this stream token';
    if (transfer.kind === 'tree-upload' && preamble.bytes !== 0)
      return 'a tar upload announces 0 bytes and sends its archive until it ends the stream';
    this.byStreamToken.delete(preamble.token);
    transfer.stream = socket;
    // Bytes moving on the stream keep the transfer active; a stream that stalls lets it go idle.
    this.touch(id!);
    socket.on('data', () => this.lastActive.set(id!, Date.now()));
    socket.on('drain', () => this.lastActive.set(id!, Date.now()));
    const idleMs = this.config().fsTransferIdleMs;
    socket.setTimeout(idleMs, () => {
      const cut = new Error(`no byte moved for ${idleMs} ms (fsTransferIdleMs): the transfer stream was cut`);
      // An upload's peer is told why before the cut; a download's bytes must not be followed by text.
      if (transfer.kind === 'download' || transfer.kind === 'tree-download' || !socket.writable) socket.destroy(cut);
      else socket.end(`error ${cut.message}\n`, () => socket.destroy(cut));
    });
    if (transfer.kind === 'tree-download') {
      // sendTree catches its own failures: the client sees a cut archive.
      transfer.sending = sendTree(transfer.source, socket).catch(() => {
        socket.destroy();
      });
      return undefined;
    }
    if (transfer.kind === 'tree-upload') {
      // The client ends its side when the archive is sent; the answer still reaches it then.
      socket.allowHalfOpen = true;
      transfer.tail = receiveTree(transfer.tree, socket, preamble.rest).then(
        () => answer(socket, `ok ${transfer.tree.bytes}`),
        (error: unknown) => {
          transfer.failed = error;
          answer(socket, `error ${treeErrorOf(transfer.tree, error).message}`);
        },
      );
      return undefined;
    }
    if (transfer.kind === 'download') {
      // sendDownload catches its own failures: the client sees a short stream.
      this.sendDownload(transfer, socket).catch(() => socket.destroy());
      return undefined;
    }
    // After the chunks already taken, if any; the pump never rejects (a failure is `failed`).
    transfer.tail = transfer.tail.then(() => this.receiveUpload(transfer, socket, preamble.bytes, preamble.rest));
    return undefined;
  }

  /** Writes exactly `bytes` of the stream into the upload's temp file, then answers `ok`. */
  private async receiveUpload(upload: Upload, socket: Socket, bytes: number, rest: Buffer): Promise<void> {
    if (upload.failed) {
      socket.end(`error ${(upload.failed as Error).message}\n`);
      return;
    }
    const sink = new FileAppender(upload.temp.handle, upload.nextOffset);
    let remaining = bytes;
    const take = async (chunk: Buffer) => {
      if (chunk.length > remaining) throw new Error(`the stream sent more than the ${bytes} bytes it announced`);
      remaining -= chunk.length;
      upload.nextOffset += chunk.length;
      upload.hash.update(chunk);
      await sink.add(chunk);
    };
    try {
      if (rest.length > 0) await take(rest);
      if (remaining > 0) {
        for await (const chunk of socket.iterator({ destroyOnReturn: false })) {
          await take(chunk as Buffer);
          if (remaining === 0) break;
        }
      }
      await sink.flush();
      if (remaining > 0) throw new Error(`the stream ended after ${bytes - remaining} of ${bytes} bytes`);
      socket.end(`ok ${bytes}\n`);
      this.countBytes('write', bytes);
    } catch (error) {
      upload.failed = error;
      socket.end(`error ${(error as Error).message}\n`);
    }
  }

  /** Answers `ok <size>`, then the opened file's bytes, and hangs up. */
  private async sendDownload(download: Download, socket: Socket): Promise<void> {
    try {
      socket.write(`ok ${download.size}\n`);
      await fileToSocket(download.handle, download.size, socket);
      socket.end();
      this.countBytes('read', download.size);
    } catch {
      // The client sees a short stream and says so; nothing else depends on this one.
      socket.destroy();
    }
  }

  /** Ends every transfer `matches` selects (a closed connection's, a closed session's, all at shutdown). */
  async releaseWhere(matches: (owner: TransferOwner) => boolean): Promise<void> {
    const ids = [...this.transfers].filter(([, transfer]) => matches(transfer.owner)).map(([id]) => id);
    await Promise.all(ids.map((id) => this.release(id)));
  }

  /** Closes a transfer's files; an upload's temp file (unless committed) and record go too. */
  private async release(id: string): Promise<void> {
    const transfer = this.transfers.get(id);
    if (!transfer) return;
    this.transfers.delete(id);
    this.lastActive.delete(id);
    this.byStreamToken.delete(transfer.streamToken);
    // A stream still moving bytes is cut; one that answered finishes flushing its answer.
    if (transfer.stream && !transfer.stream.writableEnded) transfer.stream.destroy();
    if (transfer.kind === 'download') {
      await transfer.handle.close().catch(() => {});
      return;
    }
    if (transfer.kind === 'tree-download') {
      await transfer.sending;
      await transfer.source.dir.handle.close().catch(() => {});
      return;
    }
    await transfer.tail;
    if (transfer.kind === 'tree-upload') {
      await discardTree(transfer.tree);
      await forgetUpload(transfer.record).catch(() => {});
      return;
    }
    await transfer.temp.handle.close().catch(() => {});
    if (transfer.temp.at !== '') await unlink(transfer.temp.at).catch(() => {});
    await transfer.anchor.dir.close().catch(() => {});
    await forgetUpload(transfer.record).catch(() => {});
  }
}

/** The one line a stream's answer is, when the peer can still read it (a client that ended its side may not). */
function answer(socket: Socket, line: string): void {
  if (socket.writable) socket.end(`${line}\n`);
  else socket.destroy();
}
