/** How the CLI shows background jobs: one-line outcomes and the `execd jobs` table. */
import type { JobSnapshot } from '../../protocol/types.js';
import { formatTable } from './table.js';

/** The marker line that ends a job's output, as `execd run` ends a run's; none for exit 0. */
export function jobMarker(job: JobSnapshot): string | undefined {
  switch (job.status) {
    case 'completed':
      return job.exitCode ? `[exit code: ${job.exitCode}]` : undefined;
    case 'killed':
      return job.signal ? `[killed by signal: ${job.signal}]` : `[killed: ${job.detail ?? 'killed before exit'}]`;
    case 'failed':
      return `[failed: ${job.detail ?? 'unknown reason'}]`;
    default:
      return undefined;
  }
}

/** One line about a job: `bash-3 completed (exit code: 0)`. */
export function describeJob(job: JobSnapshot): string {
  return job.detail ? `${job.id} ${job.status} (${job.detail})` : `${job.id} ${job.status}`;
}

/** The `execd jobs` table. */
export function jobsTable(jobs: JobSnapshot[]): string {
  return formatTable(
    ['ID', 'STATUS', 'SESSION', 'PID', 'STARTED', 'DETAIL', 'COMMAND'],
    jobs.map((job) => [
      job.id,
      job.status,
      job.ownerSession,
      String(job.pid),
      job.startedAt.replace('T', ' ').replace(/\.\d+Z$/, 'Z'),
      job.detail ?? '',
      job.label,
    ]),
  );
}
