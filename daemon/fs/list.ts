/**
 * `fs/list`: a directory walk to `depth` levels, in order, paged. Entries are sorted by path
 * component by component (a directory's children follow it), which is the order of a walk with
 * sorted children, so a page is produced without holding the whole tree: the cursor is the
 * relative path of the last entry returned, and the next page skips everything up to it. A
 * symlink is listed, never followed; hidden trees are left out.
 */
import { constants, type Dirent } from 'node:fs';
import { lstat, open, opendir, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { ExecdError } from '../../protocol/errors.js';
import { DEFAULT_FS_LIST_LIMIT, type FsListEntry, type FsListResult } from '../../protocol/fs.js';
import { dirAt, entryAt, openDirectory } from './anchor.js';
import { targetOf, type FsCall } from './call.js';
import { denied, fsErrorOf } from './errno.js';
import { isHidden, refusal } from './policy.js';
import { beyondPolicy } from './read-ops.js';
import { entryTypeOf } from './stats.js';

/** -1, 0 or 1: `a` before, equal to or after `b`, component by component. */
export function compareComponents(a: readonly string[], b: readonly string[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
  }
  return Math.sign(a.length - b.length);
}

/** True when some entry below `prefix` may still come after `cursor`. */
function mayHoldAfter(prefix: readonly string[], cursor: readonly string[]): boolean {
  const head = cursor.slice(0, prefix.length);
  return compareComponents(prefix, head) >= 0;
}

interface Walk {
  call: FsCall;
  target: string;
  depth: number;
  limit: number;
  cursor: string[];
  entries: FsListEntry[];
  more: boolean;
}

/** Sorted names of an opened directory. */
async function sortedEntries(dir: FileHandle, dirReal: string): Promise<Dirent[]> {
  const entries: Dirent[] = [];
  for await (const entry of await opendir(dirAt(dir, dirReal))) entries.push(entry);
  return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

async function walk(state: Walk, dir: FileHandle, dirReal: string, rel: string[]): Promise<void> {
  for (const entry of await sortedEntries(dir, dirReal)) {
    if (state.more) return;
    const relPath = [...rel, entry.name];
    const real = join(dirReal, entry.name);
    if (isHidden(state.call.policy, real)) continue;
    const after = compareComponents(relPath, state.cursor) > 0;
    if (after) {
      if (state.entries.length === state.limit) {
        state.more = true;
        return;
      }
      const stats = await lstat(entryAt(dir, dirReal, entry.name)).catch(() => undefined);
      if (!stats) continue;
      state.entries.push({
        path: join(state.target, ...relPath),
        type: entryTypeOf(stats),
        size: stats.size,
        mtimeMs: stats.mtimeMs,
      });
    }
    if (!entry.isDirectory() || relPath.length >= state.depth || !mayHoldAfter(relPath, state.cursor)) continue;
    // O_NOFOLLOW: a directory swapped for a symlink since readdir is not entered.
    const child = await open(
      entryAt(dir, dirReal, entry.name),
      constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW,
    ).catch(() => undefined);
    if (!child) continue;
    try {
      await walk(state, child, real, relPath);
    } finally {
      await child.close();
    }
  }
}

/** `fs/list`. */
export async function listPath(
  call: FsCall,
  params: { path: string; depth?: number; limit?: number; cursor?: string },
): Promise<FsListResult | ExecdError> {
  const target = targetOf(call, params.path);
  let opened;
  try {
    opened = await openDirectory(target);
  } catch (error) {
    return fsErrorOf(call.method, target, error);
  }
  try {
    const why = refusal(call.policy, opened.real, 'read');
    if (why) return denied(call.method, target, why);
    const beyond = await beyondPolicy(call, await opened.handle.stat({ bigint: true }), 'read');
    if (beyond) return denied(call.method, target, beyond);
    const cursor = params.cursor ? params.cursor.split('/').filter((part) => part !== '') : [];
    const state: Walk = {
      call,
      target,
      depth: params.depth ?? 1,
      limit: params.limit ?? DEFAULT_FS_LIST_LIMIT,
      cursor,
      entries: [],
      more: false,
    };
    await walk(state, opened.handle, opened.real, []);
    const last = state.entries.at(-1);
    const nextCursor = state.more && last ? last.path.slice(target.length).replace(/^\/+/, '') : undefined;
    return nextCursor === undefined ? { entries: state.entries } : { entries: state.entries, nextCursor };
  } catch (error) {
    return error instanceof ExecdError ? error : fsErrorOf(call.method, target, error);
  } finally {
    await opened.handle.close();
  }
}
