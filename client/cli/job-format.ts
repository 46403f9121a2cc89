/** How the CLI shows background jobs: one-line outcomes and the `execd jobs` table. */
import type { JobSnapshot } from '../../protocol/types.js';
import { exitMarker, jobStateLine, limitLines } from '../../shared/render.js';
import { formatTable } from '../table.js';

/**
 * The marker line that ends a job's output, as the model's view ends a run's (`[exit code: 3]`,
 * `[killed by signal: SIGTERM]`); a job that failed or was killed before it ran shows its state
 * line instead. None for exit 0.
 */
export function jobMarker(job: JobSnapshot): string | undefined {
  if (job.status === 'failed' || job.status === 'lost' || (job.status === 'killed' && !job.signal))
    return jobStateLine(job);
  return exitMarker(job);
}

/** One line about a job: `bash-3 completed (exit code: 0)`, and what a resource limit did to it. */
export function describeJob(job: JobSnapshot): string {
  const line = job.detail ? `${job.id} ${job.status} (${job.detail})` : `${job.id} ${job.status}`;
  // What a resource limit did (`[killed: out of memory (limit 32 MiB)]`), on the same line.
  return [line, ...limitLines(job)].join(' ');
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
