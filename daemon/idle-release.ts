/**
 * Helpers the daemon starts on demand — the spawner process, the pattern and FIFO threads — end
 * once idle for HELPER_IDLE_MS: a burst of work keeps them, an idle daemon holds none (B10: a
 * thread costs ~8 MB, the spawner process ~13 MB). The next use starts one again.
 */

/** How long an unused helper lives on. */
export const HELPER_IDLE_MS = 2_000;

/** Calls `release` once `idle()` was said and nothing said `cancel()` for `ms` after it. */
export class IdleRelease {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly release: () => void,
    private readonly ms = HELPER_IDLE_MS,
  ) {}

  /** The helper has nothing to do: release it unless work comes within `ms`. */
  idle(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(this.release, this.ms);
    // Never what keeps the daemon alive.
    this.timer.unref();
  }

  /** Work came (or the helper ends anyway): no release. */
  cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
