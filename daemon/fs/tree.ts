/**
 * Directory creation and removal that walk by descriptor: each level is opened with `O_NOFOLLOW`
 * through its parent's descriptor, so a symlink swapped in mid-walk is never entered.
 */
import { constants } from 'node:fs';
import { mkdir, open, readdir, rmdir, unlink, type FileHandle } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { dirAt, entryAt, openDirectory, realPathOf } from './anchor.js';
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

/** Removes the directory `name` of the opened `parent` and everything in it, never following a symlink. */
export async function removeTree(parent: FileHandle, parentReal: string, name: string): Promise<void> {
  const at = entryAt(parent, parentReal, name);
  const dir = await open(at, DIR_NOFOLLOW);
  const real = join(parentReal, name);
  try {
    for (const entry of await readdir(dirAt(dir, real), { withFileTypes: true })) {
      if (entry.isDirectory()) await removeTree(dir, real, entry.name);
      else
        await unlink(entryAt(dir, real, entry.name)).catch(async (error: unknown) => {
          // A directory swapped in for the file since readdir: remove it as one.
          if (errnoOf(error) === 'EISDIR' || errnoOf(error) === 'EPERM') await removeTree(dir, real, entry.name);
          else if (errnoOf(error) !== 'ENOENT') throw error;
        });
    }
  } finally {
    await dir.close();
  }
  await rmdir(at);
}
