/**
 * One deadline that fuses the executor's timeout and the caller's cancellation (PROTOCOL.md): the
 * first to fire wins, so `timedOut` and `aborted` are never both true.
 */

/**
 * The abort reason of the runs the daemon's shutdown ends: their result says the daemon stopped.
 * Declared with the deadline that reads it, so that the executor needs nothing of runs/.
 */
export const SHUTDOWN_ABORT = 'daemon shutdown';

/** Why a run was stopped. */
export type StopReason = 'timeout' | 'abort';

/** A fused timeout + abort signal; `reason` is set once, by whichever fires first. */
export class Deadline {
  reason: StopReason | undefined;
  /** Resolves with the reason when the deadline fires; never rejects. */
  readonly fired: Promise<StopReason>;
  private timer: NodeJS.Timeout | undefined;
  private onAbort: (() => void) | undefined;

  constructor(
    timeoutMs: number,
    private readonly signal?: AbortSignal,
  ) {
    this.fired = new Promise<StopReason>((resolve) => {
      const fire = (reason: StopReason) => {
        if (this.reason) return;
        this.reason = reason;
        this.dispose();
        resolve(reason);
      };
      this.timer = setTimeout(() => fire('timeout'), timeoutMs);
      if (signal?.aborted) fire('abort');
      else if (signal) {
        this.onAbort = () => fire('abort');
        signal.addEventListener('abort', this.onAbort, { once: true });
      }
    });
  }

  /** Stops listening; a deadline that has not fired by now never will. */
  dispose(): void {
    clearTimeout(this.timer);
    if (this.onAbort) this.signal?.removeEventListener('abort', this.onAbort);
    this.onAbort = undefined;
  }
}
