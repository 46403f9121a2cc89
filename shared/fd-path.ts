/**
 * Naming an entry through an open directory's descriptor (`/proc/self/fd/N/name`): the kernel
 * resolves the magic link to the very directory that was opened and checked, so a symlink swapped
 * into the path afterwards changes nothing. Used by the daemon's file methods and by both ends of a
 * tree transfer; where `/proc/self/fd` does not exist the real path is used instead.
 */
import { constants } from 'node:fs';
import { open, readlink, realpath, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';

/** True where `/proc/self/fd` names an open descriptor's file (Linux). */
export const PROC_FD = process.platform === 'linux';

/** Flags that open a directory and never follow a symlink in its place. */
export const DIR_NOFOLLOW = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** The path a call can use for an open descriptor. */
export function fdPath(handle: FileHandle): string {
  return `/proc/self/fd/${handle.fd}`;
}

/** The real path of what a descriptor has open. */
export async function realPathOf(handle: FileHandle, openedAs: string): Promise<string> {
  if (!PROC_FD) return realpath(openedAs);
  return readlink(fdPath(handle));
}

/** Opens a directory (following symlinks unless `flags` say otherwise), with its real path. */
export async function openDirectory(path: string, flags = 0): Promise<{ handle: FileHandle; real: string }> {
  const handle = await open(path, constants.O_RDONLY | constants.O_DIRECTORY | flags);
  try {
    return { handle, real: await realPathOf(handle, path) };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** The path of `name` inside an opened directory. */
export function entryAt(dir: FileHandle, dirReal: string, name: string): string {
  return PROC_FD ? `${fdPath(dir)}/${name}` : join(dirReal, name);
}

/** The path of `name` inside a directory open as the descriptor `fd`. */
export function entryAtFd(fd: number, dirReal: string, name: string): string {
  return PROC_FD ? `/proc/self/fd/${fd}/${name}` : join(dirReal, name);
}

/** The path of an opened directory itself. */
export function dirAt(dir: FileHandle, dirReal: string): string {
  return PROC_FD ? fdPath(dir) : dirReal;
}
