/**
 * What the daemon's V8 heap holds while nothing happens: a daemon runs in every sandbox, so what
 * it keeps idle is paid per pod (B10, docs/performance.md#footprint).
 *
 * - V8 doubles the young generation whenever a scavenge finds it busy, up to 16 MB semi-spaces,
 *   and gives that back only after seconds of its own idle heuristics. The daemon keeps the first
 *   size instead (`--semi-space-growth-factor=1`, read by V8 at each growth): a burst of 200 runs
 *   left 16 MB of young generation behind, now 1 MB; B1–B4 did not move.
 * - Once the daemon has handled requests and then had none for QUIET_MS, with nothing running,
 *   one full collection gives back what the burst left in the old generation, and `malloc_trim`
 *   what its threads left in malloc's arenas.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { trimMalloc } from './libc.js';

/** How long the daemon must be quiet before the collection. */
export const QUIET_MS = 1_000;

const KEEP_YOUNG_GENERATION = '--semi-space-growth-factor=1';

/**
 * Keeps the young generation at its first size; call before the daemon's modules load. Starting a
 * worker thread sets V8's flags back to the command line's, this one with them (after one thread
 * started, a tree upload grew the young generation to 32 MB), so it is set again for each thread.
 */
export function keepYoungGenerationSmall(): void {
  setFlagsFromString(KEEP_YOUNG_GENERATION);
  process.on('worker', (worker) => {
    setFlagsFromString(KEEP_YOUNG_GENERATION);
    worker.once('online', () => setFlagsFromString(KEEP_YOUNG_GENERATION));
    // What the thread freed as it ended stays in its malloc arena until trimmed.
    worker.once('exit', () => trimMalloc());
  });
}

/** V8's `gc()`, exposed at run time (the `--expose-gc` flag is read when a context is made). */
function exposeGc(): (() => void) | undefined {
  setFlagsFromString('--expose-gc');
  const gc: unknown = runInNewContext('gc');
  return typeof gc === 'function' ? (gc as () => void) : undefined;
}

/**
 * Collects once after each burst: `activity` counts the work done so far (requests handled),
 * `busy` says whether some is still going on. Returns the stop function.
 */
export function collectWhenQuiet(activity: () => number, busy: () => boolean, quietMs = QUIET_MS): () => void {
  const gc = exposeGc();
  if (!gc) return () => {};
  let seen = activity();
  let collectedAt = seen;
  const timer = setInterval(() => {
    const now = activity();
    const quiet = now === seen && !busy();
    seen = now;
    if (!quiet || now === collectedAt) return;
    collectedAt = now;
    gc();
    trimMalloc();
  }, quietMs);
  timer.unref();
  return () => clearInterval(timer);
}
