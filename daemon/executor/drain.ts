/**
 * The settle rule shared by foreground runs and background jobs (PROTOCOL.md): after the shell
 * exits, wait while a descendant may still write the output — its pipes are still open, or a
 * live member of its process group still has one of its capture files open — but never past
 * `graceMs`, unless a kill is under way, in which case until the tree is gone.
 *
 * A descendant that let go of the output (`sleep 600 >/dev/null 2>&1 &`, the way a dev server is
 * started) holds nothing: the run settles as soon as the shell has exited.
 */
import { once } from 'node:events';
import { fstatSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { groupAlive, waitGroupGone } from '../processes/group-signals.js';
import { HAS_PROC, holdsAnyFile, liveGroupMembers, type FileId } from '../../shared/proc.js';

/** Interval at which the holders of a capture file are checked. */
const HOLDER_POLL_MS = 20;

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

/** Device and inode of open descriptors; a descriptor that cannot be read is left out. */
function fileIds(fds: readonly number[]): FileId[] {
  const ids: FileId[] = [];
  for (const fd of fds) {
    try {
      const { dev, ino } = fstatSync(fd);
      ids.push({ dev, ino });
    } catch {
      // Closed meanwhile: nothing to wait for.
    }
  }
  return ids;
}

/**
 * Resolves once no live member of group `pgid` has one of `files` open, or `stop()` says to give
 * up. Incremental: the group is scanned once, then only its known members' descriptor tables are
 * read at each poll (a few syscalls); the group is scanned again only when none of them holds a
 * file any more, since a new holder can only be a child a holder forked before it let go.
 */
async function filesReleased(pgid: number, files: FileId[], stop: () => boolean): Promise<void> {
  // The common case, a run that left nothing behind, costs one signal-0 and no /proc read.
  if (files.length === 0 || !groupAlive(pgid)) return;
  let members = liveGroupMembers(pgid);
  while (!stop()) {
    if (!members.some((pid) => holdsAnyFile(pid, files))) {
      // A member that died since the scan may have forked a holder first: scan once more.
      const now = liveGroupMembers(pgid);
      if (now.every((pid) => members.includes(pid))) return;
      members = now;
      continue;
    }
    await delay(HOLDER_POLL_MS);
  }
}

/** What may still write a child's output after its exit. */
export interface OutputHolders {
  stdout: Readable | null;
  stderr: Readable | null;
  /** Descriptors (in the daemon) of the capture files the child writes into directly. */
  captureFds?: readonly number[];
  /**
   * True while the daemon itself has stopped reading the pipes (the streaming client is behind):
   * output already in the pipe is not a descendant holding it, so that time does not count
   * against the grace period.
   */
  paused?: () => boolean;
}

/** Resolves after `ms` of time during which `paused` was false (or once `stop()` says so). */
async function unpausedDelay(ms: number, paused: () => boolean, stop: () => boolean): Promise<void> {
  const step = Math.min(ms, 50);
  let counted = 0;
  while (counted < ms && !stop()) {
    await delay(step);
    if (!paused()) counted += step;
  }
}

/**
 * Waits, after the exit of the leader of group `pgid`, until the output can no longer change
 * (its pipes closed and no live member of the group holds a capture file), `graceMs` passed, or
 * `kill` (once started) is done. Without /proc, a child without pipes waits for its group to be
 * gone instead.
 */
export async function drainAfterExit(
  child: OutputHolders,
  pgid: number,
  graceMs: number,
  kill: Promise<unknown>,
): Promise<void> {
  // The common case, a child without pipes whose group is gone with it: nothing can still write.
  if (!child.stdout && !child.stderr && !groupAlive(pgid)) return;
  let over = false;
  const pipes = Promise.all([closed(child.stdout), closed(child.stderr)]);
  const fds = child.captureFds ?? [];
  let files: Promise<unknown> = Promise.resolve();
  if (fds.length > 0) {
    files = HAS_PROC
      ? filesReleased(pgid, fileIds(fds), () => over)
      : child.stdout || child.stderr
        ? Promise.resolve()
        : waitGroupGone(pgid, graceMs);
  }
  let timer: NodeJS.Timeout | undefined;
  const grace = child.paused
    ? unpausedDelay(graceMs, child.paused, () => over)
    : new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs).unref()));
  try {
    await Promise.race([Promise.all([pipes, files]), grace, kill]);
  } finally {
    over = true;
    // No grace timer outlives the drain: a run a second would otherwise keep graceMs of them pending.
    clearTimeout(timer);
  }
}
