/**
 * A job as the journal keeps it, and a job brought back from that record after a restart (its
 * output then comes from its log files).
 */
import { Job } from './job.js';
import { fileSize, LogFileStream } from './job-streams.js';
import type { JobRecord } from './journal-entries.js';

/** The journal record of a job's current state. */
export function toRecord(job: Job): JobRecord {
  const { kind: _kind, ...snapshot } = job.snapshot();
  const { logPaths } = job.identity;
  const record: JobRecord = {
    ...snapshot,
    stdoutPath: logPaths.stdout,
    stderrPath: logPaths.stderr,
    cursor: { ...job.cursor },
  };
  if (job.procStartTime !== undefined) record.procStartTime = job.procStartTime;
  if (job.keptStdinOpen) record.keepStdinOpen = true;
  if (job.kept && job.isLive) record.kept = true;
  if (job.requestKey) record.requestKey = { ...job.requestKey };
  return record;
}

/**
 * A job restored from its record. The log files say how much was written: a job that was still
 * running when the daemon died wrote past what its last record knew.
 */
export function fromRecord(record: JobRecord, windowBytes: number): Job {
  const stream = (path: string, recorded: number) => {
    const size = fileSize(path);
    return new LogFileStream(size === undefined ? undefined : path, size ?? recorded, windowBytes);
  };
  const job = new Job(
    {
      id: record.id,
      label: record.label,
      ownerSession: record.ownerSession,
      startedAt: new Date(record.startedAt),
      logPaths: { stdout: record.stdoutPath, stderr: record.stderrPath },
    },
    { stdout: stream(record.stdoutPath, record.stdoutBytes), stderr: stream(record.stderrPath, record.stderrBytes) },
  );
  job.status = record.status;
  job.detail = record.detail;
  job.pid = record.pid;
  job.procStartTime = record.procStartTime;
  job.exitCode = record.exitCode;
  job.signal = record.signal;
  job.finishedAt = record.finishedAt === undefined ? undefined : new Date(record.finishedAt);
  job.reported = record.reported;
  job.sandbox = record.sandbox;
  job.cursor = { ...record.cursor };
  job.keptStdinOpen = record.keepStdinOpen === true;
  job.kept = record.kept === true;
  job.requestKey = record.requestKey;
  job.restored = true;
  job.resolveIfSettled();
  return job;
}
