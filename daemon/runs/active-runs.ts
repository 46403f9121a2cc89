/**
 * Foreground runs in flight, each with the controller that aborts it. A dropped connection, a
 * closed session and shutdown abort theirs here and wait until each has answered.
 */

import { SHUTDOWN_ABORT } from '../executor/deadline.js';

/** The abort reason of the runs the daemon's shutdown ends: their result says the daemon stopped. */
export { SHUTDOWN_ABORT };

/** Why a `keepJobs` shutdown closed the terminals (their exit detail, as the client and the model see it). */
export const TERMINALS_DO_NOT_SURVIVE = 'the daemon stopped (terminals do not survive a restart)';

/** One foreground run in flight. */
export interface ActiveRun {
  sessionId: string;
  /** The connection that started it. */
  owner: object;
  controller: AbortController;
  /** Settles when the run has answered (its tree is gone or left over). */
  done: Promise<unknown>;
}

/** The table of in-flight foreground runs. */
export class ActiveRuns {
  private readonly runs = new Set<ActiveRun>();

  /** Registers a run until its `done` settles (resolved or rejected: the caller reports a rejection). */
  add(run: ActiveRun): void {
    this.runs.add(run);
    const forget = () => {
      this.runs.delete(run);
    };
    // Both branches handled: a `finally` here would re-raise a failed run as an unhandled rejection.
    run.done.then(forget, forget);
  }

  /** How many runs are in flight. */
  get size(): number {
    return this.runs.size;
  }

  /** Aborts every run that matches and resolves once each has answered. */
  async abortWhere(match: (run: ActiveRun) => boolean, reason?: typeof SHUTDOWN_ABORT): Promise<number> {
    const doomed = [...this.runs].filter(match);
    for (const run of doomed) run.controller.abort(reason);
    await Promise.allSettled(doomed.map((run) => run.done));
    return doomed.length;
  }
}
