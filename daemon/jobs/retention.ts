/**
 * Which settled jobs the table releases (pure): every one settled longer ago than
 * `settledJobRetentionMs`, then the oldest past `maxSettledJobs`. Running jobs are never counted.
 */

/** A settled job as the retention rule sees it. */
export interface SettledEntry {
  id: string;
  /** When it settled (ms since the epoch). */
  finishedAtMs: number;
}

/** The bounds, from the configuration. */
export interface SettledBounds {
  maxSettledJobs: number;
  settledJobRetentionMs: number;
}

/** The ids to release, oldest settlement first. */
export function settledToRelease(settled: readonly SettledEntry[], now: number, bounds: SettledBounds): string[] {
  const oldestFirst = [...settled].sort((a, b) => a.finishedAtMs - b.finishedAtMs);
  const expired = oldestFirst.findIndex((entry) => now - entry.finishedAtMs < bounds.settledJobRetentionMs);
  const tooOld = expired === -1 ? oldestFirst.length : expired;
  const overCount = Math.max(0, oldestFirst.length - bounds.maxSettledJobs);
  return oldestFirst.slice(0, Math.max(tooOld, overCount)).map((entry) => entry.id);
}
