/**
 * The daemon-wide bound on job stdin queued in memory: every open `keepStdinOpen` stdin of every
 * session is counted, so jobs that never read cannot together hold more than `maxTotalStdinBytes`.
 */

/** Something holding queued stdin bytes. */
export interface QueuedStdin {
  /** Bytes written by the daemon and not yet read by the job. */
  readonly queuedBytes: number;
}

/** The open stdins of all jobs and what they hold together. */
export class StdinPool {
  private readonly open = new Set<QueuedStdin>();

  /** Counts `stdin` from now on. */
  add(stdin: QueuedStdin): void {
    this.open.add(stdin);
  }

  /** Stops counting `stdin` (closed: what it queued is released). */
  delete(stdin: QueuedStdin): void {
    this.open.delete(stdin);
  }

  /** Bytes queued across every open stdin (the set is bounded by the job limits). */
  get queuedBytes(): number {
    let total = 0;
    for (const stdin of this.open) total += stdin.queuedBytes;
    return total;
  }

  /** Open stdins counted. */
  get size(): number {
    return this.open.size;
  }
}
