/**
 * Ending jobs from outside: `job/kill`, `job/release`, a closed session, and shutdown. Each
 * resolves only once the process trees are gone.
 */
import { lstat, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { MAX_TIMER_MS } from '../../protocol/config.js';
import type { ProcessRegistry } from '../processes/process-registry.js';
import type { Job } from './job.js';
import { CapturedFileStream, GrowingLogFileStream } from './job-streams.js';
import type { JobTable } from './job-table.js';

/**
 * Kills a live job's tree (`running → stopping`) and resolves once it is gone and the job has
 * settled. A settled job may have left processes in its group (its shell exited, descendants did
 * not): they are killed too, and the answer is true when there were any. False when the job had
 * already settled with nothing left, or ended by itself before the kill landed.
 */
export async function killJob(job: Job, graceMs: number): Promise<boolean> {
  if (job.isSettled) return (await job.killLeftovers?.(graceMs)) ?? false;
  job.markStopping();
  // Without killTree the process is still being spawned; the launcher kills it on arrival.
  await job.killTree?.(graceMs);
  await job.settled;
  return job.status === 'killed';
}

/**
 * Deletes a job's log files, unless their directory or the spill root is no longer a real
 * directory: a symlink swapped in for either is never traversed (the files would be someone else's).
 */
export async function deleteJobFiles(job: Job): Promise<void> {
  const { logPaths } = job.identity;
  // The session's directory and the spill root above it: a path through either must not lead elsewhere.
  const dirs = new Set([logPaths.stdout, logPaths.stderr].flatMap((path) => [dirname(path), dirname(dirname(path))]));
  for (const dir of dirs) {
    const info = await lstat(dir).catch(() => undefined);
    if (!info?.isDirectory()) return;
  }
  await Promise.all([rm(logPaths.stdout, { force: true }), rm(logPaths.stderr, { force: true })]);
}

/** `job/release`: kills the job if it runs, forgets it and deletes its files. */
export async function releaseJob(table: JobTable, job: Job, graceMs: number): Promise<void> {
  await killJob(job, graceMs);
  forgetQuietly(table, job);
  await deleteJobFiles(job);
}

/** Size of a file, 0 when it is gone. */
async function sizeOf(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch {
    return 0;
  }
}

/**
 * `job/clean`: releases settled jobs at once (forgets them, deletes their log files); resolves
 * with how many and the bytes their files held.
 */
export async function cleanJobs(table: JobTable, jobs: Job[]): Promise<{ released: number; bytes: number }> {
  const settled = jobs.filter((job) => job.isSettled);
  const sizes = await Promise.all(
    settled.map(async (job) => {
      const { stdout, stderr } = job.identity.logPaths;
      const bytes = (await sizeOf(stdout)) + (await sizeOf(stderr));
      table.forget(job);
      await deleteJobFiles(job);
      return bytes;
    }),
  );
  return { released: settled.length, bytes: sizes.reduce((sum, bytes) => sum + bytes, 0) };
}

/**
 * Forgets a job even when its journal record cannot be written (a full disk): the table drops it
 * before journaling, and a release or session close must still finish its work.
 */
function forgetQuietly(table: JobTable, job: Job): void {
  try {
    table.forget(job);
  } catch {
    // The next compaction writes the table without it.
  }
}

/**
 * A session closed: its live jobs are killed, every job of it forgotten (its files go with the
 * session's directory). Resolves with how many jobs were killed.
 */
export async function endSessionJobs(table: JobTable, sessionId: string, graceMs: number): Promise<number> {
  const outcomes = await Promise.all(table.live(sessionId).map((job) => killJob(job, graceMs)));
  for (const job of table.list(sessionId)) forgetQuietly(table, job);
  return outcomes.filter(Boolean).length;
}

/** Shutdown: every live job's tree is killed; the table keeps them, settled, for the next daemon. */
export async function killAllJobs(table: JobTable, graceMs: number): Promise<void> {
  await Promise.all(table.live().map((job) => killJob(job, graceMs)));
}

/**
 * A `keepJobs` shutdown (docs/reconnect.md): a running job whose output needs no daemon — both streams
 * written by its process into its log files — is left running, journaled `kept`, and its group
 * untracked so no later step kills it. The others (a sandbox runner's stderr through a pipe, a
 * job being stopped or not spawned yet) are killed as at any shutdown. Resolves with the kept.
 */
export async function keepOrKillJobs(
  table: JobTable,
  processes: ProcessRegistry,
  graceMs: number,
  /** Keeps also a job whose output the daemon reads, when this takes it over (an upgrade in place hands its pipes on). */
  takeOver?: (job: Job) => boolean,
): Promise<Job[]> {
  const kept: Job[] = [];
  const doomed: Job[] = [];
  for (const job of table.live()) {
    const keepable = job.status === 'running' && !job.held && job.pid > 0 && job.killTree !== undefined;
    (keepable && (writesItsOwnLogs(job) || takeOver?.(job) === true) ? kept : doomed).push(job);
  }
  for (const job of kept) {
    job.kept = true;
    job.unfollow?.();
    for (const group of processes.live()) if (group.pgid === job.pid) processes.untrack(group);
    table.record(job);
  }
  await Promise.all(doomed.map((job) => killJob(job, graceMs)));
  return kept;
}

/** True when both streams of a live job go from its process straight into its log files. */
function writesItsOwnLogs(job: Job): boolean {
  const own = (stream: Job['streams']['stdout']) =>
    stream instanceof CapturedFileStream || stream instanceof GrowingLogFileStream;
  return own(job.streams.stdout) && own(job.streams.stderr);
}

/** Resolves when the job settles or `timeoutMs` passes (never, without a timeout), whichever is first. */
export async function settledWithin(job: Job, timeoutMs: number | undefined): Promise<void> {
  if (job.isSettled) return;
  if (timeoutMs === undefined) return job.settled;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.min(timeoutMs, MAX_TIMER_MS))));
  await Promise.race([job.settled, timedOut]);
  clearTimeout(timer);
}
