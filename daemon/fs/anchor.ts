/**
 * Race-free path resolution without `openat`: a directory is opened once, its real path is read
 * back from the descriptor (`/proc/self/fd/N`), and every later call names the entry through that
 * descriptor (`/proc/self/fd/N/name`). The kernel resolves the magic link to the very directory
 * that was checked, so a symlink swapped into the path after the check changes nothing: the call
 * lands where the check looked, or fails. Final components are never followed by a write (rename,
 * unlink, mkdir and `O_NOFOLLOW` opens act on the entry itself).
 */
import { constants } from 'node:fs';
import { open, readlink, realpath, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** True where `/proc/self/fd` names an open descriptor's file (Linux). */
const PROC_FD = process.platform === 'linux';

/** The path a call can use for an open descriptor. */
export function fdPath(handle: FileHandle): string {
  return `/proc/self/fd/${handle.fd}`;
}

/** The real path of what a descriptor has open. */
export async function realPathOf(handle: FileHandle, openedAs: string): Promise<string> {
  if (!PROC_FD) return realpath(openedAs);
  return readlink(fdPath(handle));
}

/** An opened parent directory and the entry below it that a call acts on. */
export interface Anchor {
  dir: FileHandle;
  /** Real path of the directory. */
  dirReal: string;
  /** The entry's name ('' for `/`). */
  name: string;
  /** Real path of the entry (its last component not followed). */
  real: string;
  /** The path to hand a system call for the entry: through the directory's descriptor. */
  at: string;
}

/** Opens a directory (following symlinks), with its real path. */
export async function openDirectory(path: string, flags = 0): Promise<{ handle: FileHandle; real: string }> {
  const handle = await open(path, constants.O_RDONLY | constants.O_DIRECTORY | flags);
  try {
    return { handle, real: await realPathOf(handle, path) };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** Opens the parent of an absolute, normalized path; the caller closes `anchor.dir`. */
export async function anchorParent(target: string): Promise<Anchor> {
  const name = basename(target);
  const { handle, real } = await openDirectory(target === '/' ? '/' : dirname(target));
  const at = name === '' ? fdPath(handle) : PROC_FD ? `${fdPath(handle)}/${name}` : join(real, name);
  return { dir: handle, dirReal: real, name, real: name === '' ? real : join(real, name), at };
}

/** The path of `name` inside an opened directory. */
export function entryAt(dir: FileHandle, dirReal: string, name: string): string {
  return PROC_FD ? `${fdPath(dir)}/${name}` : join(dirReal, name);
}

/** The path of an opened directory itself. */
export function dirAt(dir: FileHandle, dirReal: string): string {
  return PROC_FD ? fdPath(dir) : dirReal;
}
