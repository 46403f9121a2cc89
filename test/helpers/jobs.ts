/** Helpers for background job tests: read a job to its end, wait for its settlement. */
import type { ExecdClient } from '../../client/connection.js';
import { DaemonStatus, JobRead, JobWait } from '../../protocol/methods.js';
import { waitFor } from './wait.js';
import type { JobReadResult, JobSnapshot } from '../../protocol/types.js';

/** True once a job reached `completed`, `killed` or `failed`. */
export function isSettled(job: JobSnapshot): boolean {
  return job.status === 'completed' || job.status === 'killed' || job.status === 'failed';
}

/** What reading a job to its end gave. */
export interface ReadToEnd {
  /** Every delta, concatenated. */
  text: string;
  lossy: boolean;
  last: JobReadResult;
}

/** Reads a job repeatedly (polling every `intervalMs`) until a read shows it settled. */
export async function readToEnd(
  client: ExecdClient,
  sessionId: string,
  jobId: string,
  intervalMs = 5,
): Promise<ReadToEnd> {
  let text = '';
  let lossy = false;
  for (;;) {
    const result = await client.call(JobRead, { sessionId, jobId });
    text += result.delta;
    lossy ||= result.lossy;
    if (isSettled(result.job)) return { text, lossy, last: result };
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** Waits (without a timeout) until the job settled; returns its snapshot. */
export function waitJob(client: ExecdClient, sessionId: string, jobId: string): Promise<JobSnapshot> {
  return client.call(JobWait, { sessionId, jobId });
}

/** Waits until the daemon has handled the drop of every connection that had `sessionId` open. */
export async function waitSessionUnheld(observer: ExecdClient, sessionId: string): Promise<void> {
  await waitFor(
    async () =>
      (await observer.call(DaemonStatus, {})).sessions.find((session) => session.sessionId === sessionId)
        ?.connections === 0,
    `the daemon to see ${sessionId} without connections`,
  );
}
