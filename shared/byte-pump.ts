/**
 * Moving a file's bytes to and from a socket with bounded memory, for transfer streams (docs/files.md)
 * on both sides. Plain `FileHandle` reads and writes rather than `createReadStream`: a stream made
 * on a handle closes the handle when destroyed, and holds it (its `close()` waits) until then,
 * while a transfer must keep its handle open past the stream (an upload fsyncs and renames it).
 */
import type { FileHandle } from 'node:fs/promises';
import type { Socket } from 'node:net';

/** Bytes read from a file, or gathered before a write to it, at a time. */
export const PUMP_BUFFER_BYTES = 256 * 1024;

/** Resolves once `socket` can take more; rejects if it closes first. */
export function drained(socket: Socket): Promise<void> {
  return new Promise((resolve, reject) => {
    const settle = (error?: Error) => {
      socket.off('drain', onDrain);
      socket.off('close', onClose);
      if (error) reject(error);
      else resolve();
    };
    const onDrain = () => settle();
    const onClose = () => settle(new Error('the transfer stream closed before every byte was sent'));
    socket.once('drain', onDrain);
    socket.once('close', onClose);
  });
}

/** Writes `size` bytes of `file` from offset 0 to `socket`; calls `each` on every piece first. Returns what was read. */
export async function fileToSocket(
  file: FileHandle,
  size: number,
  socket: Socket,
  each: (bytes: Buffer, done: number) => void = () => {},
): Promise<number> {
  let offset = 0;
  while (offset < size) {
    const buffer = Buffer.allocUnsafe(Math.min(PUMP_BUFFER_BYTES, size - offset));
    const { bytesRead } = await file.read(buffer, 0, buffer.length, offset);
    if (bytesRead === 0) break;
    const bytes = buffer.subarray(0, bytesRead);
    offset += bytesRead;
    each(bytes, offset);
    if (!socket.write(bytes)) await drained(socket);
  }
  return offset;
}

/** Gathers pieces and writes them to `file` at consecutive offsets, `PUMP_BUFFER_BYTES` at a time. */
export class FileAppender {
  private pieces: Buffer[] = [];
  private gathered = 0;

  constructor(
    private readonly file: FileHandle,
    private position: number,
  ) {}

  /** Takes `bytes`; writes what was gathered once it reaches a buffer's worth. */
  async add(bytes: Buffer): Promise<void> {
    this.pieces.push(bytes);
    this.gathered += bytes.length;
    if (this.gathered >= PUMP_BUFFER_BYTES) await this.flush();
  }

  /** Writes whatever was gathered. */
  async flush(): Promise<void> {
    let pieces = this.pieces;
    let left = this.gathered;
    this.pieces = [];
    this.gathered = 0;
    while (left > 0) {
      const { bytesWritten } = await this.file.writev(pieces, this.position);
      this.position += bytesWritten;
      left -= bytesWritten;
      if (left > 0) pieces = remainderOf(pieces, bytesWritten);
    }
  }
}

/** `pieces` less their first `written` bytes (a short write). */
function remainderOf(pieces: Buffer[], written: number): Buffer[] {
  const rest: Buffer[] = [];
  let skip = written;
  for (const piece of pieces) {
    if (skip >= piece.length) skip -= piece.length;
    else {
      rest.push(skip > 0 ? piece.subarray(skip) : piece);
      skip = 0;
    }
  }
  return rest;
}
