/**
 * What a tree transfer (docs/files.md) lets an archive entry be, decided without touching the file
 * system: its name as path components below the target, and whether its type and mode may land.
 * Both ends apply the same rules, the daemon to uploads and the client to downloads.
 */

/** Why an archive was refused: the message names the entry and the rule. */
export class TreeRefusal extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

/** Bounds of one archive being unpacked. */
export interface TreeLimits {
  /** Entries of every type. */
  maxEntries: number;
  /** Bytes of one regular file. */
  maxFileBytes: number;
  /** Bytes of all regular files together. */
  maxTotalBytes: number;
}

/** Longest name an entry may have, in characters (Linux `PATH_MAX`). */
export const MAX_TREE_NAME_LENGTH = 4096;

/**
 * The components of an entry's name below the target (`[]` for the target itself: `.` or `./`).
 * Refuses absolute names, `..` components, NUL and over-long names; a leading `./` and empty or
 * `.` components are dropped, as `tar` does.
 */
export function entryParts(name: string): string[] {
  if (name.length > MAX_TREE_NAME_LENGTH)
    throw new TreeRefusal(`entry name longer than ${MAX_TREE_NAME_LENGTH} characters`);
  if (name.includes('\0')) throw new TreeRefusal(`entry ${JSON.stringify(name)} has a NUL in its name`);
  if (name.startsWith('/')) throw new TreeRefusal(`entry ${JSON.stringify(name)} has an absolute name`);
  const parts = name.split('/').filter((part) => part !== '' && part !== '.');
  if (parts.includes('..')) throw new TreeRefusal(`entry ${JSON.stringify(name)} has a '..' component`);
  return parts;
}

/** Permission bits an entry keeps: the sticky bit and rwx for all; setuid/setgid never. */
const KEPT_MODE_BITS = 0o1777;
const SET_ID_BITS = 0o6000;

/**
 * The mode a regular file is given. A setuid or setgid file refuses the archive: no archive may
 * plant a program that runs as someone else.
 */
export function fileModeOf(name: string, mode: number): number {
  if ((mode & SET_ID_BITS) !== 0)
    throw new TreeRefusal(`entry ${JSON.stringify(name)} is setuid or setgid (mode ${(mode & 0o7777).toString(8)})`);
  return mode & KEPT_MODE_BITS;
}

/** The mode a directory is given: setgid (inherited group) is dropped, setuid refuses. */
export function directoryModeOf(name: string, mode: number): number {
  if ((mode & 0o4000) !== 0)
    throw new TreeRefusal(`entry ${JSON.stringify(name)} is a setuid directory (mode ${(mode & 0o7777).toString(8)})`);
  return mode & KEPT_MODE_BITS;
}

/** The entry types an archive may carry; devices, FIFOs and anything else refuse it. */
export type TreeEntryKind = 'file' | 'directory' | 'symlink' | 'link';

/** The tar entry types a tree transfer creates, and what each lands as. */
const KIND_OF_TYPE: Readonly<Record<string, TreeEntryKind>> = {
  file: 'file',
  'contiguous-file': 'file',
  directory: 'directory',
  symlink: 'symlink',
  link: 'link',
};

/** What a tar header's type lands as, or a refusal. */
export function entryKindOf(name: string, type: string | null | undefined): TreeEntryKind {
  const kind = type ? KIND_OF_TYPE[type] : undefined;
  if (kind) return kind;
  throw new TreeRefusal(
    `entry ${JSON.stringify(name)} is a ${type ?? 'entry of unknown type'}, which a tree transfer never creates`,
  );
}
