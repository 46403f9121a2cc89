/**
 * The settle rule shared by foreground runs and background jobs (SPEC §1.3): after the shell
 * exits, wait for the pipes a descendant may still hold open, but never past `graceMs` — unless a
 * kill is under way, in which case until the tree is gone.
 */
import { once } from 'node:events';
import type { Readable } from 'node:stream';

/** Resolves when a stream has closed (at once for a missing or already closed one). */
function closed(stream: Readable | null): Promise<void> {
  if (!stream || stream.closed) return Promise.resolve();
  return once(stream, 'close').then(() => undefined, () => undefined);
}

/** Resolves after `ms` without keeping the daemon alive. */
function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** Waits, after the exit, until both pipes closed, `graceMs` passed, or `kill` (once started) is done. */
export async function drainAfterExit(
  child: { stdout: Readable | null; stderr: Readable | null },
  graceMs: number,
  kill: Promise<unknown>,
): Promise<void> {
  await Promise.race([Promise.all([closed(child.stdout), closed(child.stderr)]), delay(graceMs), kill]);
}
