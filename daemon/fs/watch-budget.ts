/**
 * What a recursive `fs/watch` costs before it is set up: the directories of its tree (one inotify
 * watch each), counted by an asynchronous walk that never follows a symlink, leaves hidden trees
 * out and stops as soon as the count passes what is left of the budgets. The daemon-wide budget is
 * also kept below half of the user's inotify limit, so the daemon never takes every watch its
 * user's other programs need.
 */
import { readFileSync, type Dir } from 'node:fs';
import { opendir } from 'node:fs/promises';
import { join } from 'node:path';
import { isHidden, type FsPolicy } from './policy.js';

/** Half of `/proc/sys/fs/inotify/max_user_watches`; undefined where it cannot be read. */
export function inotifyShare(): number | undefined {
  try {
    const max = Number(readFileSync('/proc/sys/fs/inotify/max_user_watches', 'utf8').trim());
    return Number.isInteger(max) && max > 0 ? Math.floor(max / 2) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Directories of the tree at `real` (itself included), counted up to `limit + 1`: a result above
 * `limit` means "more than the budget", and the walk stopped there. Unreadable directories count
 * as one each (the watcher would try them too).
 */
export async function countDirectories(real: string, limit: number, policy: FsPolicy): Promise<number> {
  let count = 1;
  const left = [real];
  while (left.length > 0 && count <= limit) {
    const dir = left.pop()!;
    let handle: Dir;
    try {
      handle = await opendir(dir, { bufferSize: 256 });
    } catch {
      continue;
    }
    try {
      for await (const entry of handle) {
        if (!entry.isDirectory()) continue;
        const path = join(dir, entry.name);
        if (isHidden(policy, path)) continue;
        if (++count > limit) break;
        left.push(path);
      }
    } catch {
      // A directory removed mid-walk: what was counted stands.
    }
  }
  return count;
}
