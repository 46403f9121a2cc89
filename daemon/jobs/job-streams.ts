/**
 * Where a job's output is read from: while it runs, the log file its process writes stdout into
 * and the collector its stderr pipe feeds; once settled, or restored from the journal after a
 * restart, the log files (or, past the cap, the tail kept in memory). All answer the same
 * questions through the same window, so reads behave the same before and after a settlement or a
 * restart.
 */
import { closeSync, openSync, statSync } from 'node:fs';
import type { OutputCollector } from '../../spill/collector.js';
import { readAt, type FileCapture } from '../../spill/file-capture.js';
import type { StreamSlice } from './stream-read.js';

/** The two stream names of a job. */
export type StreamName = 'stdout' | 'stderr';

/** One readable stream of a job. */
export interface JobStream {
  /** Whole-stream bytes written so far. */
  readonly totalBytes: number;
  /** The log file holding the complete stream; undefined once it passed the cap or was deleted. */
  readonly logPath: string | undefined;
  /** The bytes from `from` to the end that the reading window still holds. */
  sliceFrom(from: number): StreamSlice;
  /**
   * At most `maxBytes` bytes from `from`: from the log file while it holds them (any offset), else
   * from the window (lossy when `from` lies before it).
   */
  pageFrom(from: number, maxBytes: number): StreamSlice;
}

/**
 * A page of a stream: `[from, from + maxBytes)` as the log file gives it (`fromFile` answers
 * undefined when it cannot), else the start of the window slice.
 */
function page(
  from: number,
  maxBytes: number,
  totalBytes: number,
  fromFile: ((from: number, to: number) => Uint8Array | undefined) | undefined,
  window: (from: number) => StreamSlice,
): StreamSlice {
  const start = Math.min(from, totalBytes);
  const bytes = fromFile?.(start, Math.min(totalBytes, start + maxBytes));
  if (bytes) return { bytes, offset: start, lossy: false };
  const slice = window(from);
  return { ...slice, bytes: slice.bytes.subarray(0, maxBytes) };
}

/** The whole range read, or undefined when the file holds fewer bytes (removed or cut). */
function whole(bytes: Uint8Array, from: number, to: number): Uint8Array | undefined {
  return bytes.length === to - from ? bytes : undefined;
}

/**
 * The slice from `from` to `totalBytes` that a window of the last `windowBytes` still holds;
 * `read` gives the bytes of a range, or undefined when they are gone.
 */
function windowSlice(
  from: number,
  totalBytes: number,
  windowBytes: number,
  read: (from: number, to: number) => Uint8Array | undefined,
): StreamSlice {
  const windowStart = Math.max(0, totalBytes - windowBytes);
  const offset = Math.min(Math.max(from, windowStart), totalBytes);
  const bytes = read(offset, totalBytes);
  if (!bytes) return { bytes: new Uint8Array(0), offset: totalBytes, lossy: from < totalBytes };
  return { bytes, offset, lossy: from < windowStart };
}

/**
 * A running job's stdout, which its process writes straight into the log file: no byte passes
 * through the daemon, and a read sees a line as soon as it is written.
 */
export class CapturedFileStream implements JobStream {
  constructor(
    private readonly capture: FileCapture,
    private readonly windowBytes: number,
  ) {}

  get totalBytes(): number {
    return this.capture.totalBytes;
  }

  get logPath(): string | undefined {
    return this.capture.path;
  }

  sliceFrom(from: number): StreamSlice {
    return windowSlice(from, this.totalBytes, this.windowBytes, (start, end) => this.capture.read(start, end));
  }

  pageFrom(from: number, maxBytes: number): StreamSlice {
    // Once the file passed the cap its front is freed: only the window is still exact.
    const fromFile =
      this.capture.path === undefined ? undefined : (a: number, b: number) => whole(this.capture.read(a, b), a, b);
    return page(from, maxBytes, this.totalBytes, fromFile, (start) => this.sliceFrom(start));
  }
}

/** A settled stream whose file passed the cap: only its last bytes, kept in memory, remain. */
export class TailBytesStream implements JobStream {
  readonly logPath = undefined;

  constructor(
    private readonly tail: Uint8Array,
    readonly totalBytes: number,
  ) {}

  sliceFrom(from: number): StreamSlice {
    const tailStart = this.totalBytes - this.tail.length;
    return windowSlice(from, this.totalBytes, this.tail.length, (start) => this.tail.subarray(start - tailStart));
  }

  pageFrom(from: number, maxBytes: number): StreamSlice {
    return page(from, maxBytes, this.totalBytes, undefined, (start) => this.sliceFrom(start));
  }
}

/** A live stream fed through a pipe: the collector's in-memory window, its file written from byte 0. */
export class CollectedStream implements JobStream {
  constructor(readonly collector: OutputCollector) {}

  get totalBytes(): number {
    return this.collector.totalBytes;
  }

  get logPath(): string | undefined {
    return this.collector.spillPath;
  }

  sliceFrom(from: number): StreamSlice {
    return this.collector.tail.sliceFrom(from);
  }

  pageFrom(from: number, maxBytes: number): StreamSlice {
    const path = this.collector.spillPath;
    const fromFile = path === undefined ? undefined : (a: number, b: number) => readRange(path, a, b);
    return page(from, maxBytes, this.totalBytes, fromFile, (start) => this.sliceFrom(start));
  }
}

/**
 * A restored stream: its log file, read through a window of the same size as a live job's memory,
 * so a reader far behind gets a bounded reply marked lossy and the path of the whole file.
 */
export class LogFileStream implements JobStream {
  constructor(
    private readonly path: string | undefined,
    readonly totalBytes: number,
    private readonly windowBytes: number,
  ) {}

  get logPath(): string | undefined {
    return this.path !== undefined && fileSize(this.path) !== undefined ? this.path : undefined;
  }

  sliceFrom(from: number): StreamSlice {
    const { path } = this;
    return windowSlice(from, this.totalBytes, this.windowBytes, (start, end) =>
      path === undefined ? undefined : readRange(path, start, end),
    );
  }

  pageFrom(from: number, maxBytes: number): StreamSlice {
    const { path } = this;
    const fromFile = path === undefined ? undefined : (a: number, b: number) => readRange(path, a, b);
    return page(from, maxBytes, this.totalBytes, fromFile, (start) => this.sliceFrom(start));
  }
}

/**
 * The log file of a job adopted after a restart, which its process still writes: like a
 * `LogFileStream`, but its size is the file's now, so reads see each line once it is written.
 */
export class GrowingLogFileStream implements JobStream {
  private lastBytes: number;

  constructor(
    private readonly path: string,
    recordedBytes: number,
    private readonly windowBytes: number,
  ) {
    this.lastBytes = recordedBytes;
  }

  get totalBytes(): number {
    // A file cut or deleted under the job never shrinks what was already counted.
    this.lastBytes = Math.max(this.lastBytes, fileSize(this.path) ?? 0);
    return this.lastBytes;
  }

  get logPath(): string | undefined {
    return fileSize(this.path) !== undefined ? this.path : undefined;
  }

  sliceFrom(from: number): StreamSlice {
    return windowSlice(from, this.totalBytes, this.windowBytes, (start, end) => readRange(this.path, start, end));
  }

  pageFrom(from: number, maxBytes: number): StreamSlice {
    const fromFile = (a: number, b: number) => readRange(this.path, a, b);
    return page(from, maxBytes, this.totalBytes, fromFile, (start) => this.sliceFrom(start));
  }
}

/** Size of a file, or undefined when it does not exist. */
export function fileSize(path: string): number | undefined {
  try {
    return statSync(path).size;
  } catch {
    return undefined;
  }
}

/** Bytes `[from, to)` of a file; undefined when the file is gone or shorter than `to`. */
function readRange(path: string, from: number, to: number): Uint8Array | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return undefined;
  }
  try {
    return whole(readAt(fd, from, to), from, to);
  } finally {
    closeSync(fd);
  }
}
