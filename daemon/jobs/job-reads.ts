/**
 * `job/read` (consuming) and `job/peek` (at explicit offsets, consuming nothing) over a job's
 * streams. Reads stay valid after the job settled; only a settled job's last partial character is
 * delivered, since nothing can complete it any more.
 */
import type { JobPeekResult, JobReadResult } from '../../protocol/types.js';
import type { Job } from './job.js';
import { consumeSlices, decodeSlice } from './stream-read.js';

/** Reads what is new since the last read and advances the job's cursor. */
export function readJob(job: Job): JobReadResult {
  const complete = job.isSettled;
  const { stdout, stderr } = job.streams;
  const read = consumeSlices(stdout.sliceFrom(job.cursor.stdout), stderr.sliceFrom(job.cursor.stderr), complete);
  job.cursor = read.cursor;
  const result: JobReadResult = { delta: read.delta, lossy: read.lossy, job: job.snapshot() };
  if (read.lossy) {
    // The reader fell behind the window: name the files that hold every byte.
    if (stdout.logPath) result.stdoutSpillPath = stdout.logPath;
    if (stderr.logPath) result.stderrSpillPath = stderr.logPath;
  }
  return result;
}

/** Reads both streams from the given offsets (default 0) without touching the cursor. */
export function peekJob(job: Job, offsets: { stdoutOffset?: number; stderrOffset?: number }): JobPeekResult {
  const complete = job.isSettled;
  return {
    stdout: decodeSlice(job.streams.stdout.sliceFrom(offsets.stdoutOffset ?? 0), complete),
    stderr: decodeSlice(job.streams.stderr.sliceFrom(offsets.stderrOffset ?? 0), complete),
    job: job.snapshot(),
  };
}
