/**
 * A capped, owner-only file that receives a stream from byte 0. Writes are synchronous: they go to
 * the page cache in microseconds, keep bytes strictly ordered, and need no backpressure dance
 * between a child's pipe and a write stream.
 */
import { closeSync, mkdirSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/** Creates a directory tree with mode 0700 (existing directories are left as they are). */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
}

/** One spill or log file. Once the cap is passed the file is deleted: an incomplete file would lie. */
export class SpillFile {
  private fd: number | undefined;
  private written = 0;
  private discarded = false;

  constructor(
    readonly path: string,
    private readonly maxBytes: number,
  ) {
    ensurePrivateDir(dirname(path));
    this.fd = openSync(path, 'w', 0o600);
  }

  /** The path while the file is complete and present; undefined once discarded. */
  get livePath(): string | undefined {
    return this.discarded ? undefined : this.path;
  }

  /** Appends bytes, or discards the file when they would pass the cap. */
  write(chunk: Uint8Array): void {
    if (this.fd === undefined) return;
    if (this.written + chunk.length > this.maxBytes) {
      this.discard();
      return;
    }
    let done = 0;
    while (done < chunk.length) done += writeSync(this.fd, chunk, done, chunk.length - done);
    this.written += chunk.length;
  }

  /** Closes the file, keeping it on disk. */
  close(): void {
    if (this.fd === undefined) return;
    closeSync(this.fd);
    this.fd = undefined;
  }

  /** Closes and deletes the file. */
  discard(): void {
    this.close();
    if (this.discarded) return;
    this.discarded = true;
    try {
      unlinkSync(this.path);
    } catch {
      // Already gone: the goal is reached.
    }
  }
}
