/**
 * Capture of one stream that the child writes straight into a file (docs/jobs.md; without a copy):
 * the daemon opens the owner-only file, hands its descriptor to the child as the stream, and reads
 * the tail back when the run ends. Bytes never pass through the daemon, so capture runs at the
 * speed of a plain shell redirect.
 *
 * The reported result is the same as `OutputCollector`'s: a stream that stayed within `maxBytes`
 * leaves no file (unless `keepFile`: a job's log) and is not truncated; a longer one keeps the file
 * (complete from byte 0) as its `spillPath`; one past `maxSpillBytes` loses the file and keeps only
 * the tail.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { CAPTURE_FILE_RESERVE, hasSpareDescriptors, NEAR_FILE_LIMIT } from './fd-headroom.js';
import { closeSync, constants, fstatSync, ftruncateSync, openSync, readSync, statfsSync, unlinkSync } from 'node:fs';
import { dirname } from 'node:path';
import type { CollectedOutput } from '../protocol/types.js';
import { CREATE_NOFOLLOW, ensurePrivateDir, failureText, openSpillFiles } from './spill-file.js';
import { decodeUtf8, leadingContinuationBytes } from './utf8.js';

/** How often a running stream's size is checked against `maxSpillBytes`. */
const WATCH_MS = 100;
/** How often, after the run answered, a leftover writer's file is kept from growing. */
const LEFTOVER_WATCH_MS = 1_000;
/** Bytes a discarded file may hold beyond the tail before its front is freed. */
const PUNCH_SLACK_BYTES = 16 * 1024 * 1024;
/** Filesystem block size the freed range is aligned to. */
const BLOCK_BYTES = 4096;

/** How one file-backed stream is captured. */
export interface FileCaptureOptions {
  /** Bytes of the tail reported in `text`. */
  maxBytes: number;
  /** Past this size the file is deleted (an incomplete file would lie). */
  maxSpillBytes: number;
  /** Where the file lives; its directory is created 0700. */
  path: string;
  /** Keep the file whatever its size, until it passes `maxSpillBytes` (a background job's log). */
  keepFile?: boolean;
}

/**
 * Free bytes a file system must have for a stream to be captured straight into a file: the child
 * then writes the whole stream there, and on a full disk its writes fail where the daemon cannot
 * see them. Below it, callers capture through a pipe, which keeps the tail in memory whatever
 * happens to the file.
 */
const MIN_FREE_BYTES = 64 * 1024 * 1024;

/**
 * Bytes free on the file system holding `dir`: for an unprivileged writer, or (`anyone`) at all,
 * root's reserve included; undefined when unknown.
 */
export function freeBytes(dir: string, anyone = false): number | undefined {
  try {
    const info = statfsSync(dir);
    return (anyone ? info.bfree : info.bavail) * info.bsize;
  } catch {
    return undefined;
  }
}

/**
 * Opens a file capture, or says why it cannot be one: the file cannot be created (no descriptors or
 * inodes left, a symlink in the way) or its file system has less than `MIN_FREE_BYTES` (or the
 * cap, if smaller) free. The caller then captures through a pipe.
 */
export function openFileCapture(options: FileCaptureOptions): FileCapture | Error {
  try {
    if (!hasSpareDescriptors(CAPTURE_FILE_RESERVE)) return new Error(NEAR_FILE_LIMIT);
    ensurePrivateDir(dirname(options.path));
    const free = freeBytes(dirname(options.path));
    const needed = Math.min(MIN_FREE_BYTES, options.maxSpillBytes);
    if (free !== undefined && free < needed) {
      return new Error(`ENOSPC: only ${free} bytes free for capture files, fewer than ${needed}`);
    }
    return new FileCapture(options);
  } catch (error) {
    return new Error(failureText(error));
  }
}

/** Why a directly captured stream may be incomplete when its file system filled up during the run. */
const FILLED_UP = "the capture file's file system filled up during the run; output written after that is lost";

/** Frees the first `length` bytes of an open file, keeping its size (holes read as zeros). */
function punchFront(fd: number, length: number): Promise<boolean> {
  return new Promise((resolve) => {
    let child: ChildProcess;
    try {
      child = spawn(
        'fallocate',
        ['--punch-hole', '--offset', '0', '--length', String(length), `/proc/${process.pid}/fd/${fd}`],
        { stdio: 'ignore' },
      );
    } catch {
      // spawn throws for some failures (ENOMEM, for one) rather than emit 'error'.
      resolve(false);
      return;
    }
    child.once('error', () => resolve(false));
    child.once('exit', (code) => resolve(code === 0));
  });
}

/** Size of an open file; undefined when it cannot be read (a timer must not throw). */
function sizeOf(fd: number): number | undefined {
  try {
    return fstatSync(fd).size;
  } catch {
    return undefined;
  }
}

/** Bytes `[from, to)` of an open file; fewer when the file ends sooner. */
export function readAt(fd: number, from: number, to: number): Buffer {
  const buffer = Buffer.allocUnsafe(Math.max(0, to - from));
  let got = 0;
  while (got < buffer.length) {
    const n = readSync(fd, buffer, got, buffer.length - got, from + got);
    if (n === 0) break;
    got += n;
  }
  return buffer.subarray(0, got);
}

/** One stream captured in a file the child writes directly. */
export class FileCapture {
  /** The descriptor to give the child as its stream. */
  readonly fd: number;
  private discarded = false;
  private closed = false;
  /** Size of the file as answered; set by `finish`. */
  private answeredSize: number | undefined;
  private punchedTo = 0;
  /** Settles when no hole punch is running (the descriptor must outlive it). */
  private punch: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** The last `maxBytes` bytes as answered, ending at the answered size; set by `finish`. */
  private tail: Buffer | undefined;

  /** Made by `openFileCapture`, which has made its directory private and checked its room. */
  constructor(private readonly options: FileCaptureOptions) {
    // Read-write: the daemon reads the tail back through the same descriptor.
    this.fd = openSync(options.path, constants.O_RDWR | CREATE_NOFOLLOW, 0o600);
    // Open means in use: the retention sweep leaves the file alone until it is released.
    openSpillFiles.add(options.path);
    this.timer = setInterval(() => this.enforceCap(), WATCH_MS).unref();
  }

  /** Whole-stream bytes written so far. */
  get totalBytes(): number {
    return this.answeredSize ?? fstatSync(this.fd).size;
  }

  /** Where the child writes: the open descriptor and the file's path. */
  get target(): { fd: number; path: string } {
    return { fd: this.fd, path: this.options.path };
  }

  /** The file's path while it holds the complete stream (not deleted for passing the cap). */
  get path(): string | undefined {
    return this.discarded ? undefined : this.options.path;
  }

  /** The bytes answered by `finish`: the last `maxBytes` of the stream. */
  get answeredTail(): Buffer | undefined {
    return this.tail;
  }

  /**
   * Bytes `[from, to)` of the stream, read through the open descriptor (so even after the file was
   * deleted for passing the cap, the tail it keeps is readable); fewer when the file is shorter.
   */
  read(from: number, to: number): Buffer {
    return readAt(this.fd, from, to);
  }

  /**
   * The run is over: reads the tail and reports the capture. When `writersAlive` is given (a
   * descendant outlived the run and may still hold the stream), the file stays open, held at its
   * answered size, until `writersAlive` says no more or `release` is called.
   */
  finish(writersAlive?: () => boolean): CollectedOutput {
    clearInterval(this.timer);
    const size = fstatSync(this.fd).size;
    this.answeredSize = size;
    const tailStart = Math.max(0, size - this.options.maxBytes);
    const bytes = this.read(tailStart, size);
    this.tail = bytes;
    const truncated = tailStart > 0;
    // The child's writes fail where the daemon cannot see them; a file system that filled up says
    // they may have. The file is then incomplete, and an incomplete file would lie: it goes.
    const filledUp = freeBytes(dirname(this.options.path), true) === 0;
    if (filledUp || size > this.options.maxSpillBytes || (!truncated && !this.options.keepFile)) this.discard();
    const text = decodeUtf8(truncated ? bytes.subarray(leadingContinuationBytes(bytes)) : bytes);
    if (writersAlive) this.timer = setInterval(() => this.holdAnswered(writersAlive), LEFTOVER_WATCH_MS).unref();
    else this.release();
    const output: CollectedOutput = this.discarded
      ? { text, truncated }
      : { text, truncated, spillPath: this.options.path };
    if (filledUp) output.saveError = `output could not be saved: ENOSPC: ${FILLED_UP}`;
    return output;
  }

  /** Stops holding the file and closes it (after any hole punch that still uses it). */
  release(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    if (this.closed) return;
    this.closed = true;
    openSpillFiles.delete(this.options.path);
    const close = () => {
      try {
        closeSync(this.fd);
      } catch {
        // Only a bad descriptor fails here, and it is closed either way.
      }
    };
    // `punch` never rejects (punchFront resolves false on any failure); the descriptor closes either way.
    if (this.punch) this.punch.then(close, close);
    else close();
  }

  /** Deletes the file and closes it: the run failed before it could be answered. */
  abandon(): void {
    this.discard();
    this.release();
  }

  private discard(): void {
    if (this.discarded) return;
    this.discarded = true;
    try {
      unlinkSync(this.options.path);
    } catch {
      // Already gone: the goal is reached.
    }
  }

  /**
   * Past the cap the file is deleted; the child still holds it, so the disk it fills is freed here
   * by punching out everything before the tail (the tail must stay exact, so no truncation).
   */
  private enforceCap(): void {
    if (this.closed) return;
    const size = sizeOf(this.fd);
    if (size === undefined) return;
    if (size <= this.options.maxSpillBytes) return;
    this.discard();
    const front = Math.floor((size - this.options.maxBytes) / BLOCK_BYTES) * BLOCK_BYTES;
    if (this.punch || front - this.punchedTo < PUNCH_SLACK_BYTES) return;
    this.punch = punchFront(this.fd, front).then((ok) => {
      this.punch = undefined;
      if (ok) this.punchedTo = front;
    });
  }

  /**
   * After the answer, a leftover descendant may go on writing: the file is cut back to what was
   * answered, so a reported spill file stays the run's output and no disk fills up.
   */
  private holdAnswered(writersAlive: () => boolean): void {
    if (this.closed || this.answeredSize === undefined) return;
    const keep = this.discarded ? 0 : this.answeredSize;
    // A timer callback: a failure here must not throw (it would end the daemon).
    try {
      if (fstatSync(this.fd).size > keep) ftruncateSync(this.fd, keep);
    } catch {
      // The next tick tries again; release closes the file in any case.
    }
    if (!writersAlive()) this.release();
  }
}
