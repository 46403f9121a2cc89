/**
 * Race-free path resolution without `openat`: a directory is opened once, its real path is read
 * back from the descriptor (`/proc/self/fd/N`), and every later call names the entry through that
 * descriptor (`/proc/self/fd/N/name`). The kernel resolves the magic link to the very directory
 * that was checked, so a symlink swapped into the path after the check changes nothing: the call
 * lands where the check looked, or fails. Final components are never followed by a write (rename,
 * unlink, mkdir and `O_NOFOLLOW` opens act on the entry itself).
 */
import type { FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { entryAt, fdPath, openDirectory } from '../../shared/fd-path.js';

export { dirAt, entryAt, fdPath, openDirectory, realPathOf } from '../../shared/fd-path.js';

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

/** Opens the parent of an absolute, normalized path; the caller closes `anchor.dir`. */
export async function anchorParent(target: string): Promise<Anchor> {
  const name = basename(target);
  const { handle, real } = await openDirectory(target === '/' ? '/' : dirname(target));
  const at = name === '' ? fdPath(handle) : entryAt(handle, real, name);
  return { dir: handle, dirReal: real, name, real: name === '' ? real : join(real, name), at };
}
