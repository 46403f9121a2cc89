/**
 * `job/read` (consuming) and `job/peek` (at explicit offsets, consuming nothing) over a job's
 * streams. Reads stay valid after the job settled; only a settled job's last partial character is
 * delivered, since nothing can complete it any more.
 */
import type { JobPeekResult, JobReadResult } from '../../protocol/types.js';
import type { Job } from './job.js';
import type { StreamName } from './job-streams.js';
import { consumeSlices, decodeSlice, MIN_PAGE_BYTES, type StreamSlice } from './stream-read.js';

/** Reads what is new since the last read and advances the job's cursor. */
export function readJob(job: Job): JobReadResult {
  const complete = job.isSettled;
  const { stdout, stderr } = job.streams;
  const from = job.cursor;
  const read = consumeSlices(stdout.sliceFrom(from.stdout), stderr.sliceFrom(from.stderr), complete);
  job.cursor = read.cursor;
  const result: JobReadResult = {
    delta: read.delta,
    lossy: read.lossy,
    stdout: { ...read.stdout, from: from.stdout },
    stderr: { ...read.stderr, from: from.stderr },
    job: job.snapshot(),
  };
  if (read.lossy) {
    // The reader fell behind the window: name the files that hold every byte.
    if (stdout.logPath) result.stdoutSpillPath = stdout.logPath;
    if (stderr.logPath) result.stderrSpillPath = stderr.logPath;
  }
  return result;
}

/**
 * A read that delivers nothing and leaves the cursor where it is: the answer to a waiting read
 * whose caller went away or cancelled, so no output is consumed that nobody will receive.
 */
export function emptyRead(job: Job): JobReadResult {
  const at = (from: number) => ({ text: '', from, offset: from, nextOffset: from });
  return { delta: '', lossy: false, stdout: at(job.cursor.stdout), stderr: at(job.cursor.stderr), job: job.snapshot() };
}

/**
 * True when a consuming read would deliver something now: unread bytes that are more than the
 * start of a character still being written.
 */
export function hasUnread(job: Job): boolean {
  return (['stdout', 'stderr'] as const).some((name) => {
    const stream = job.streams[name];
    const from = job.cursor[name];
    const unread = stream.totalBytes - from;
    if (unread <= 0) return false;
    // Four bytes always hold a whole character (or invalid bytes, delivered as they are).
    if (unread >= MIN_PAGE_BYTES) return true;
    return decodeSlice(stream.sliceFrom(from), false).nextOffset > from;
  });
}

/**
 * Reads both streams from the given offsets (default 0) without touching the cursor: at most
 * `maxBytes` per stream (default: the memory window), from the log files whenever they hold the
 * bytes, so only output past `maxSpillBytes` can be lossy.
 */
export function peekJob(
  job: Job,
  offsets: { stdoutOffset?: number; stderrOffset?: number; maxBytes?: number },
  windowBytes: number,
): JobPeekResult {
  const maxBytes = Math.max(offsets.maxBytes ?? windowBytes, MIN_PAGE_BYTES);
  const peek = (name: StreamName, from: number) => {
    const stream = job.streams[name];
    const slice: StreamSlice = stream.pageFrom(from, maxBytes);
    // Everything is delivered only at the end of a stream that can no longer grow.
    return decodeSlice(slice, job.isSettled && slice.offset + slice.bytes.length >= stream.totalBytes);
  };
  return {
    stdout: peek('stdout', offsets.stdoutOffset ?? 0),
    stderr: peek('stderr', offsets.stderrOffset ?? 0),
    job: job.snapshot(),
  };
}
