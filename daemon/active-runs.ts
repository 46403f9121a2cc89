/**
 * Foreground runs in flight, each with the controller that aborts it. A dropped connection, a
 * closed session and shutdown abort theirs here and wait until each has answered.
 */

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

  /** Registers a run until its `done` settles. */
  add(run: ActiveRun): void {
    this.runs.add(run);
    // A rejected run reaches the handler that awaits `done` (answered, logged); this copy is only for cleanup.
    run.done.finally(() => this.runs.delete(run)).catch(() => {});
  }

  /** How many runs are in flight. */
  get size(): number {
    return this.runs.size;
  }

  /** Aborts every run that matches and resolves once each has answered. */
  async abortWhere(match: (run: ActiveRun) => boolean): Promise<number> {
    const doomed = [...this.runs].filter(match);
    for (const run of doomed) run.controller.abort();
    await Promise.allSettled(doomed.map((run) => run.done));
    return doomed.length;
  }
}
