/**
 * The wait of `job/read { waitMs }`: until the job has output its reader has not read, the job
 * settles, the caller gives up, or `waitMs` passes. A job's stdout goes from its process straight
 * into the log file, so growth is seen by looking at the file's size: one `fstat` every
 * `GROWTH_POLL_MS` per waiting reader, on an unref'd timer, costs microseconds and blocks nobody.
 */
import { MAX_TIMER_MS } from '../../protocol/config.js';
import type { Job } from './job.js';
import { hasUnread } from './job-reads.js';

/** How often a waiting reader looks for new output: short against a model's turn, cheap against a core. */
export const GROWTH_POLL_MS = 25;

/**
 * Resolves when `job` has unread output or settles, when `waitMs` passes, or when `cancelled`
 * fires, whichever comes first. Resolves at once when there is something to read already.
 */
export function waitForOutput(job: Job, waitMs: number, cancelled?: (listener: () => void) => void): Promise<void> {
  if (waitMs <= 0 || job.isSettled || hasUnread(job)) return Promise.resolve();
  return new Promise<void>((resolve) => {
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearInterval(poll);
      clearTimeout(deadline);
      resolve();
    };
    const poll = setInterval(() => {
      if (hasUnread(job)) finish();
    }, GROWTH_POLL_MS).unref();
    const deadline = setTimeout(finish, Math.min(waitMs, MAX_TIMER_MS)).unref();
    // `settled` never rejects; were it to, the wait would end all the same.
    job.settled.then(finish, finish);
    cancelled?.(finish);
  });
}
