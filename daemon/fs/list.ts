/**
 * `fs/list`: a directory walk to `depth` levels, in order, paged. Entries are sorted by path
 * component by component (a directory's children follow it), which is the order of a walk with
 * sorted children: the cursor is the relative path of the last entry returned, and the next page
 * skips everything up to it, by binary search in each directory's sorted names. The names of each
 * directory read are kept for the listing's later pages (`list-snapshots.ts`), so a page costs
 * in proportion to the page; without them (dropped, expired) a page reads the directories again.
 * A symlink is listed, never followed; hidden trees are left out.
 */
import { constants, type Dirent, type Stats } from 'node:fs';
import { lstat, open, opendir, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { ExecdError } from '../../protocol/errors.js';
import { DEFAULT_FS_LIST_LIMIT, type FsListEntry, type FsListResult } from '../../protocol/fs.js';
import { dirAt, entryAt, openDirectory } from './anchor.js';
import { targetOf, type FsCall } from './call.js';
import { denied, fsErrorOf } from './errno.js';
import { type DirNames, type ListSnapshots, type ListingSnapshot } from './list-snapshots.js';
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
  /** Where the names of the directories read are kept between pages, if anywhere. */
  snapshot?: ListingSnapshot;
}

/** Sorted names of an opened directory. */
async function sortedEntries(dir: FileHandle, dirReal: string): Promise<Dirent[]> {
  const entries: Dirent[] = [];
  for await (const entry of await opendir(dirAt(dir, dirReal))) entries.push(entry);
  return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The sorted names of the directory `dir` at `rel`: those the listing kept, else read now (and kept). */
async function namesOf(state: Walk, dir: FileHandle, dirReal: string, rel: string[]): Promise<DirNames> {
  const key = rel.join('/');
  const { dev, ino } = await dir.stat({ bigint: true });
  const held = state.snapshot?.get(key, { dev, ino });
  if (held) return held;
  const entries = await sortedEntries(dir, dirReal);
  const read: DirNames = {
    names: entries.map((entry) => entry.name),
    dirs: Uint8Array.from(entries, (entry) => (entry.isDirectory() ? 1 : 0)),
    dev,
    ino,
  };
  state.snapshot?.keep(key, read);
  return read;
}

/** Index of the first of the sorted `names` not before `name`. */
function lowerBound(names: readonly string[], name: string): number {
  let low = 0;
  let high = names.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (names[mid]! < name) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** Entries whose `lstat` runs at once while a page is filled. */
const STAT_BATCH = 64;

async function walk(state: Walk, dir: FileHandle, dirReal: string, rel: string[]): Promise<void> {
  const { names, dirs } = await namesOf(state, dir, dirReal, rel);
  // On the cursor's own path, what sorts before its next component (and all below it) was listed.
  const onCursorPath =
    rel.length < state.cursor.length && compareComponents(rel, state.cursor.slice(0, rel.length)) === 0;
  const start = onCursorPath ? lowerBound(names, state.cursor[rel.length]!) : 0;
  // Entries of the page waiting for their lstat, which run together; pushed in order. One that
  // vanished since the names were read is left out, and the page takes the next instead.
  let batch: Array<{ name: string; relPath: string[] }> = [];
  const flush = async () => {
    const pending = batch;
    batch = [];
    const stats = await Promise.all(
      pending.map(({ name }) => lstat(entryAt(dir, dirReal, name)).catch(() => undefined)),
    );
    pending.forEach(({ relPath }, i) => {
      const stat = stats[i];
      if (stat) state.entries.push(entryOf(state, relPath, stat));
    });
  };
  /** Room for one more entry in the page: false (and `more` set) when it is full. */
  const room = async (): Promise<boolean> => {
    if (state.entries.length + batch.length < state.limit) return true;
    await flush();
    if (state.entries.length < state.limit) return true;
    state.more = true;
    return false;
  };
  for (let index = start; index < names.length; index++) {
    const name = names[index]!;
    const relPath = [...rel, name];
    const real = join(dirReal, name);
    if (isHidden(state.call.policy, real)) continue;
    const after = compareComponents(relPath, state.cursor) > 0;
    const descend = dirs[index] === 1 && relPath.length < state.depth && mayHoldAfter(relPath, state.cursor);
    if (!descend) {
      if (!after) continue;
      if (!(await room())) return;
      batch.push({ name, relPath });
      if (batch.length >= STAT_BATCH) await flush();
      continue;
    }
    // A directory to enter: what came before it is listed first, then it, then its children.
    await flush();
    if (after) {
      if (!(await room())) return;
      const stats = await lstat(entryAt(dir, dirReal, name)).catch(() => undefined);
      if (!stats) continue;
      state.entries.push(entryOf(state, relPath, stats));
    }
    // O_NOFOLLOW: a directory swapped for a symlink since readdir is not entered.
    const child = await open(
      entryAt(dir, dirReal, name),
      constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW,
    ).catch(() => undefined);
    if (!child) continue;
    try {
      await walk(state, child, real, relPath);
    } finally {
      await child.close();
    }
    if (state.more) return;
  }
  await flush();
}

/** The listing entry of `relPath`. */
function entryOf(state: Walk, relPath: string[], stats: Stats): FsListEntry {
  return { path: join(state.target, ...relPath), type: entryTypeOf(stats), size: stats.size, mtimeMs: stats.mtimeMs };
}

/** `fs/list`; `snapshots` (with the session asking) keeps what a listing read for its next pages. */
export async function listPath(
  call: FsCall,
  params: { path: string; depth?: number; limit?: number; cursor?: string },
  snapshots?: { store: ListSnapshots; sessionId: string },
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
    const depth = params.depth ?? 1;
    const state: Walk = {
      call,
      target,
      depth,
      limit: params.limit ?? DEFAULT_FS_LIST_LIMIT,
      cursor,
      entries: [],
      more: false,
      snapshot: snapshots?.store.open(snapshots.sessionId, opened.real, depth, cursor.length === 0),
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
