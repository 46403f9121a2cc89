/**
 * Directory creation and removal that walk by descriptor: each level is opened with `O_NOFOLLOW`
 * through its parent's descriptor, so a symlink swapped in mid-walk is never entered.
 */
import { constants } from 'node:fs';
import type { Dirent } from 'node:fs';
import { mkdir, open, readdir, rmdir, unlink, type FileHandle } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { PROC_FD } from '../../shared/fd-path.js';
import { dirAt, entryAt, fdPath, openDirectory, realPathOf } from './anchor.js';
import { errnoOf } from './errno.js';

const DIR_NOFOLLOW = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/**
 * Makes every missing directory of the absolute, normalized `dir`. `mayCreate(real)` is asked for
 * the real path of each directory before it is made, and returns why not (which is thrown as the
 * `reason` of an error with code `EPOLICY`). Existing levels are entered as they are.
 */
export async function ensureDirectories(dir: string, mayCreate: (real: string) => string | undefined): Promise<void> {
  const parts = dir.split(sep).filter((part) => part !== '');
  let { handle, real } = await openDirectory(sep);
  try {
    for (const part of parts) {
      const at = entryAt(handle, real, part);
      let next: FileHandle;
      try {
        next = await open(at, constants.O_RDONLY | constants.O_DIRECTORY);
      } catch (error) {
        if (errnoOf(error) !== 'ENOENT') throw error;
        const why = mayCreate(join(real, part));
        if (why) throw Object.assign(new Error(why), { code: 'EPOLICY', reason: why });
        await mkdir(at).catch((made: unknown) => {
          if (errnoOf(made) !== 'EEXIST') throw made;
        });
        next = await open(at, DIR_NOFOLLOW);
      }
      const nextReal = await realPathOf(next, join(real, part)).catch(async (error: unknown) => {
        await next.close();
        throw error;
      });
      await handle.close();
      handle = next;
      real = nextReal;
    }
  } finally {
    await handle.close();
  }
}

/** One directory of a removal in progress: its name in its parent, its identity, what is left in it. */
interface Level {
  name: string;
  /** Real path where `/proc/self/fd` is missing; elsewhere the top directory's parent's. */
  real: string;
  dev: number;
  ino: number;
  /** Entries not yet removed, read once when the level was entered. */
  left: Dirent[];
}

/**
 * Removes the directory `name` of the opened `parent` and everything in it, never following a
 * symlink. The walk is iterative and holds at most two descriptors of its own whatever the depth:
 * the current directory, and briefly the next one down or its parent. Each directory is read once
 * when it is entered; going back up reopens the parent through `..` of the open directory and
 * checks that it is the same directory (device and inode) that was entered, so a level moved
 * elsewhere mid-walk stops the removal instead of leading it out of the tree. A deep tree costs
 * memory for its levels' names, not descriptors.
 */
export async function removeTree(parent: FileHandle, parentReal: string, name: string): Promise<void> {
  const levels: Level[] = [];
  let current: FileHandle | undefined;
  const enter = async (above: FileHandle, aboveReal: string, child: string): Promise<boolean> => {
    let opened: FileHandle;
    try {
      opened = await open(entryAt(above, aboveReal, child), DIR_NOFOLLOW);
    } catch (error) {
      const code = errnoOf(error);
      if (code === 'ENOENT') return false;
      // Not a directory (any more): a symlink or file swapped in is removed as the entry itself.
      if (code === 'ENOTDIR' || code === 'ELOOP') {
        await unlink(entryAt(above, aboveReal, child)).catch(ignoreGone);
        return false;
      }
      throw error;
    }
    try {
      // Through /proc the descriptor names the level; a real path kept per level would cost memory
      // quadratic in the depth, so it is kept only where /proc is missing.
      const real = PROC_FD ? aboveReal : join(aboveReal, child);
      const stats = await opened.stat();
      const left = await readdir(dirAt(opened, real), { withFileTypes: true });
      levels.push({ name: child, real, dev: stats.dev, ino: stats.ino, left });
    } catch (error) {
      await opened.close();
      throw error;
    }
    if (current) await current.close();
    current = opened;
    return true;
  };
  try {
    if (!(await enter(parent, parentReal, name))) return;
    while (levels.length > 0) {
      const level = levels[levels.length - 1]!;
      const dir = current!;
      const entry = level.left.pop();
      if (entry) {
        if (entry.isDirectory()) await enter(dir, level.real, entry.name);
        else
          await unlink(entryAt(dir, level.real, entry.name)).catch(async (error: unknown) => {
            // A directory swapped in for the file since readdir: remove it as one.
            if (errnoOf(error) === 'EISDIR' || errnoOf(error) === 'EPERM') await enter(dir, level.real, entry.name);
            else ignoreGone(error);
          });
        continue;
      }
      // The level is empty: step up to its parent and remove it there.
      levels.pop();
      const above = levels[levels.length - 1];
      if (!above) {
        await dir.close();
        current = undefined;
        await rmdir(entryAt(parent, parentReal, level.name));
        return;
      }
      const up = await open(PROC_FD ? `${fdPath(dir)}/..` : above.real, DIR_NOFOLLOW);
      current = up;
      await dir.close();
      const stats = await up.stat();
      if (stats.dev !== above.dev || stats.ino !== above.ino)
        throw Object.assign(new Error('a directory of the tree was moved during the removal'), { code: 'EBUSY' });
      await rmdir(entryAt(up, above.real, level.name));
    }
  } finally {
    if (current) await current.close();
  }
}

function ignoreGone(error: unknown): void {
  if (errnoOf(error) !== 'ENOENT') throw error;
}
