/**
 * Helpers the daemon starts on demand — the spawner process, the pattern and FIFO threads — end
 * once idle for HELPER_IDLE_MS: a burst of work keeps them, an idle daemon holds none (B10: a
 * thread costs ~8 MB, the spawner process ~13 MB). The next use starts one again.
 *
 * A helper needed again soon after it ended (within ten times its idle time) waits twice as long
 * the next time, up to MAX_HELPER_IDLE_MS: a daemon that runs a command every few seconds keeps
 * its spawner instead of starting a Node process for each, and one left alone still lets go.
 */

/** How long an unused helper lives on at first. */
export const HELPER_IDLE_MS = 2_000;

/** The longest a helper that keeps being needed again waits before it ends. */
export const MAX_HELPER_IDLE_MS = 60_000;

/** Calls `release` once `idle()` was said and nothing said `cancel()` for the current idle time. */
export class IdleRelease {
  private timer: NodeJS.Timeout | undefined;
  private idleMs: number;
  /** When `release` last let the helper go, until the next work comes. */
  private releasedAt: number | undefined;

  /** `release` returns whether it let the helper go (it may still be busy). */
  constructor(
    private readonly release: () => boolean,
    private readonly baseMs = HELPER_IDLE_MS,
  ) {
    this.idleMs = baseMs;
  }

  /** The helper has nothing to do: release it unless work comes within the idle time. */
  idle(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.release()) this.releasedAt = Date.now();
    }, this.idleMs);
    // Never what keeps the daemon alive.
    this.timer.unref();
  }

  /** Work came (or the helper ends anyway): no release. */
  cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.releasedAt === undefined) return;
    const soon = Date.now() - this.releasedAt < this.idleMs * 10;
    this.idleMs = soon ? Math.min(this.idleMs * 2, MAX_HELPER_IDLE_MS) : this.baseMs;
    this.releasedAt = undefined;
  }
}
