/**
 * Rate limit of the warnings unauthenticated peers cause (a refused, dropped or evicted connection,
 * a failed TLS handshake): a stranger must not be able to fill the disk. Each message gets
 * `BURST` lines per window; past it the lines are counted, and one summary line per window says
 * how many of each were left out.
 */

/** Messages written on behalf of peers that need no token to cause them. */
export const PEER_NOISE = new Set([
  'connection refused',
  'connection dropped',
  'connection evicted',
  'tls handshake refused',
]);

/** Lines of one message written per window. */
export const BURST = 5;

/** The window, in milliseconds. */
export const WINDOW_MS = 10_000;

/** Counts lines per message per window (pure apart from the clock it is given). */
export class WarningLimiter {
  private windowStart = 0;
  private readonly written = new Map<string, number>();
  private readonly suppressed = new Map<string, number>();

  /** True when a line of `message` may be written at `now`; false: counted as suppressed. */
  allow(message: string, now: number): boolean {
    if (now - this.windowStart >= WINDOW_MS) {
      this.windowStart = now;
      this.written.clear();
    }
    const count = (this.written.get(message) ?? 0) + 1;
    this.written.set(message, count);
    if (count <= BURST) return true;
    this.suppressed.set(message, (this.suppressed.get(message) ?? 0) + 1);
    return false;
  }

  /** The suppressed counts since the last call (empty: nothing to report), and resets them. */
  takeSuppressed(): Record<string, number> | undefined {
    if (this.suppressed.size === 0) return undefined;
    const counts = Object.fromEntries(this.suppressed);
    this.suppressed.clear();
    return counts;
  }
}
