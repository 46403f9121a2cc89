/**
 * Telling clients about settled jobs (docs/jobs.md): `job/exited` to every connection that has the
 * owner session open; a settlement nobody received stays `reported: false` until the session's
 * next `session/open` lists it.
 */
import { JobExited } from '../../protocol/methods.js';
import type { JobSnapshot } from '../../protocol/types.js';
import type { Logger } from '../log/logger.js';
import type { SessionTable } from '../sessions/sessions.js';
import type { Job } from './job.js';
import type { JobTable } from './job-table.js';

/** Logs a settled job and sends `job/exited` to the connections holding its session. */
export function announceSettlement(job: Job, sessions: SessionTable, table: JobTable, log: Logger): void {
  log.info({ jobId: job.id, sessionId: job.ownerSession, status: job.status, detail: job.detail }, 'job settled');
  const holders = sessions.holdersOf(job.ownerSession);
  if (holders.length === 0) return;
  job.reported = true;
  table.record(job);
  const params = { sessionId: job.ownerSession, job: job.snapshot() };
  for (const holder of holders) holder.notify(JobExited, params);
}

/**
 * The jobs a `session/open` reports: those still running and those whose settlement nobody
 * received. The latter count as reported from now on (this reply carries them).
 */
export function jobsForSessionOpen(sessionId: string, table: JobTable): JobSnapshot[] {
  const listed = table.list(sessionId).filter((job) => job.isLive || !job.reported);
  const snapshots = listed.map((job) => job.snapshot());
  for (const job of listed) {
    if (job.isLive) continue;
    job.reported = true;
    table.record(job);
  }
  return snapshots;
}
