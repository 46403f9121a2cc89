/**
 * A capped, owner-only file that receives a stream from byte 0. Writes are synchronous: they go to
 * the page cache in microseconds, keep bytes strictly ordered, and need no backpressure dance
 * between a child's pipe and a write stream.
 */
import { CAPTURE_FILE_RESERVE, hasSpareDescriptors, NEAR_FILE_LIMIT } from './fd-headroom.js';
import { closeSync, constants, lstatSync, mkdirSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** Flags of a capture file opened for writing: created 0600, truncated, never through a symlink. */
export const CREATE_NOFOLLOW = constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW;

/** One line naming why a file operation failed, e.g. `ENOSPC: no space left on device, write`. */
export function failureText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

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

/**
 * Creates a capture directory (a session's spill directory) 0700, and its parent (the spill root)
 * when missing. Throws when either is not a real directory: a symlink swapped in for one (by a
 * command running as the daemon's user) is never followed, so no file is written elsewhere.
 */
export function ensurePrivateDir(dir: string): void {
  const parent = dirname(dir);
  // The common case, a directory made by an earlier run, costs two lstat calls and no exception.
  let info = lstatSync(dir, { throwIfNoEntry: false });
  if (info === undefined) {
    mkdirSync(parent, { recursive: true, mode: 0o700 });
    try {
      mkdirSync(dir, { mode: 0o700 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    info = lstatSync(dir);
  }
  if (!info.isDirectory()) throw new Error(`${dir} is not a directory (a symlink is never followed)`);
  if (!lstatSync(parent).isDirectory()) throw new Error(`${parent} is not a directory (a symlink is never followed)`);
}

/**
 * One spill or log file. Once the cap is passed the file is deleted: an incomplete file would lie.
 * It never throws: a file that cannot be created or written (a full disk, no descriptors left) is
 * deleted, and `failure` says why; the stream's tail in memory is unaffected.
 */
export class SpillFile {
  private fd: number | undefined;
  private written = 0;
  private discarded = false;
  /** Why the file could not be kept complete (`ENOSPC: …`); undefined while it is fine. */
  failure: string | undefined;

  constructor(
    readonly path: string,
    private readonly maxBytes: number,
  ) {
    try {
      if (!hasSpareDescriptors(CAPTURE_FILE_RESERVE)) throw new Error(NEAR_FILE_LIMIT);
      ensurePrivateDir(dirname(path));
      this.fd = openSync(path, constants.O_WRONLY | CREATE_NOFOLLOW, 0o600);
    } catch (error) {
      this.failure = failureText(error);
      this.discarded = true;
      return;
    }
    openSpillFiles.add(path);
  }

  /** The path while the file is complete and present; undefined once discarded. */
  get livePath(): string | undefined {
    return this.discarded ? undefined : this.path;
  }

  /** Appends bytes, or discards the file when they would pass the cap or cannot be written. */
  write(chunk: Uint8Array): void {
    if (this.fd === undefined) return;
    if (this.written + chunk.length > this.maxBytes) {
      this.discard();
      return;
    }
    try {
      let done = 0;
      while (done < chunk.length) done += writeSync(this.fd, chunk, done, chunk.length - done);
    } catch (error) {
      // Usually ENOSPC: a partial file would lie, and deleting it gives the disk back.
      this.failure = failureText(error);
      this.discard();
      return;
    }
    this.written += chunk.length;
  }

  /** Closes the file, keeping it on disk. */
  close(): void {
    if (this.fd === undefined) return;
    try {
      closeSync(this.fd);
    } catch {
      // Only a bad descriptor fails here, and it is closed either way.
    }
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
