/**
 * The settle rule shared by foreground runs and background jobs (SPEC §1.3): after the shell
 * exits, wait for the pipes a descendant may still hold open — or, for a child without pipes (its
 * streams go to capture files), for its process group to be gone — but never past `graceMs`,
 * unless a kill is under way, in which case until the tree is gone.
 */
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { waitGroupGone } from './kill.js';

/** Resolves when a stream has closed (at once for a missing or already closed one). */
function closed(stream: Readable | null): Promise<void> {
  if (!stream || stream.closed) return Promise.resolve();
  return once(stream, 'close').then(
    () => undefined,
    () => undefined,
  );
}

/** Resolves after `ms` without keeping the daemon alive. */
function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/**
 * Waits, after the exit of the leader of group `pgid`, until the output can no longer change
 * (both pipes closed; without pipes, the group gone), `graceMs` passed, or `kill` (once started)
 * is done.
 */
export async function drainAfterExit(
  child: { stdout: Readable | null; stderr: Readable | null },
  pgid: number,
  graceMs: number,
  kill: Promise<unknown>,
): Promise<void> {
  const writersDone =
    child.stdout || child.stderr
      ? Promise.all([closed(child.stdout), closed(child.stderr)])
      : waitGroupGone(pgid, graceMs);
  await Promise.race([writersDone, delay(graceMs), kill]);
}
