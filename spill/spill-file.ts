/**
 * A capped, owner-only file that receives a stream from byte 0. Writes are synchronous: they go to
 * the page cache in microseconds, keep bytes strictly ordered, and need no backpressure dance
 * between a child's pipe and a write stream.
 */
import { closeSync, mkdirSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * The spill and log files this process has open for writing. The retention sweep never removes
 * one of them: an open file belongs to a run or job that is still producing it.
 */
export class OpenFiles {
  private readonly paths = new Set<string>();
  private readonly listeners = new Set<() => void>();

  /** True while the file at `path` is open for writing. */
  has(path: string): boolean {
    return this.paths.has(resolve(path));
  }

  /** Calls `listener` whenever a file is opened or closed; returns the unsubscribe function. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Records an opened file. */
  add(path: string): void {
    this.paths.add(resolve(path));
    this.changed();
  }

  /** Records a closed file. */
  delete(path: string): void {
    if (this.paths.delete(resolve(path))) this.changed();
  }

  private changed(): void {
    for (const listener of this.listeners) listener();
  }
}

/** Every spill and log file open in this process (files are a per-process resource). */
export const openSpillFiles = new OpenFiles();

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
    openSpillFiles.add(path);
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
    openSpillFiles.delete(this.path);
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
