/** Stats as the file methods report them: entry type and the opaque version. */
import type { BigIntStats, Dirent, Stats } from 'node:fs';
import type { FsEntryType } from '../../protocol/fs.js';

/** The entry type of `lstat` stats or a directory entry. */
export function entryTypeOf(stats: Stats | BigIntStats | Dirent): FsEntryType {
  if (stats.isSymbolicLink()) return 'symlink';
  if (stats.isDirectory()) return 'directory';
  if (stats.isFile()) return 'file';
  return 'other';
}

/**
 * The opaque version: inode, size and nanosecond mtime. An atomic replace brings a new inode and
 * an in-place write a new mtime, so the version changes whenever the content may have.
 */
export function versionOf(stats: BigIntStats): string {
  return `${stats.ino.toString(36)}.${stats.size.toString(36)}.${stats.mtimeNs.toString(36)}`;
}
