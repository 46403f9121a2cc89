/**
 * Where a job's output is read from: the live collectors of a running (or just settled) job, or
 * the log files of a job restored from the journal after a restart. Both answer the same
 * questions, so reads behave the same before and after a restart.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import type { OutputCollector } from '../../spill/collector.js';
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
}

/** A live stream: the collector's in-memory window, its file written from byte 0. */
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
    const windowStart = Math.max(0, this.totalBytes - this.windowBytes);
    const offset = Math.min(Math.max(from, windowStart), this.totalBytes);
    const bytes = this.path === undefined ? undefined : readRange(this.path, offset, this.totalBytes);
    if (!bytes) return { bytes: new Uint8Array(0), offset: this.totalBytes, lossy: from < this.totalBytes };
    return { bytes, offset, lossy: from < windowStart };
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
    const buffer = Buffer.alloc(to - from);
    let done = 0;
    while (done < buffer.length) {
      const n = readSync(fd, buffer, done, buffer.length - done, from + done);
      if (n === 0) return undefined;
      done += n;
    }
    return buffer;
  } finally {
    closeSync(fd);
  }
}
