/**
 * Whether this process has file descriptors to spare, from its live RLIMIT_NOFILE (`prlimit` can
 * lower it while the daemon runs) and the descriptors it has open. Linux only (`/proc`); elsewhere
 * the answer is "yes" and a spawn that runs out fails as it would anyway.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';

/**
 * Descriptors a capture file must leave free. Near the limit the last descriptors go to pipes
 * (whose tail is kept in memory) and connections: a file and a pipe cost one descriptor each, but
 * a stream without a pipe cannot be read at all.
 */
export const CAPTURE_FILE_RESERVE = 10;

/** Why a capture file is not opened: the daemon is near its descriptor limit. */
export const NEAR_FILE_LIMIT = 'EMFILE: too few file descriptors left for a capture file';

/** The soft limit of open files in a `/proc/<pid>/limits` text; undefined when unlimited or absent. */
export function softFileLimit(limitsText: string): number | undefined {
  const match = /^Max open files\s+(\d+|unlimited)/m.exec(limitsText);
  if (!match || match[1] === 'unlimited') return undefined;
  return Number(match[1]);
}

/**
 * Descriptors open in this process. Linux 6.2+ reports the count as the size of `/proc/self/fd`
 * (one stat, ~5 µs); older kernels answer 0 there, and the directory is listed instead (~20 µs
 * with few open, far more with hundreds: it was a fifth of the daemon's time per run under B3).
 */
function openDescriptors(): number {
  const counted = statSync('/proc/self/fd').size;
  // The listing includes the descriptor it was read through, freed again by now.
  return counted > 0 ? counted : readdirSync('/proc/self/fd').length - 1;
}

/**
 * True unless this process is known to have fewer than `needed` descriptors free. Costs a read of
 * `/proc/self/limits` and a count of `/proc/self/fd` (tens of microseconds); reading them takes a
 * descriptor, which is why a process with none free answers false as well.
 */
export function hasSpareDescriptors(needed: number): boolean {
  try {
    const limit = softFileLimit(readFileSync('/proc/self/limits', 'utf8'));
    if (limit === undefined) return true;
    return limit - openDescriptors() >= needed;
  } catch (error) {
    // EMFILE: not even one descriptor to read /proc with. Anything else: no /proc to ask.
    return (error as NodeJS.ErrnoException).code !== 'EMFILE' && (error as NodeJS.ErrnoException).code !== 'ENFILE';
  }
}
