/**
 * The file methods' path policy (docs/files.md), pure: which real path a session may read or write.
 * The operations resolve a request's path to the real path of what they opened (see `anchor.ts`)
 * and ask here; nothing in this module touches the file system.
 *
 * - `read-only` refuses every write; `workspace-write` writes only beneath the workspace root;
 *   `danger-full-access` writes anywhere the daemon's user may.
 * - Hidden trees (the state dir with the token, the journals, every session's spill and log
 *   files; the socket's directory) are neither readable nor writable in any mode, and no write may
 *   remove or move a directory that holds one.
 */
import { isAbsolute, normalize, resolve, sep } from 'node:path';
import type { SandboxMode } from '../../protocol/sandbox.js';

/** A tree no file method may reach, and what it is (for the message). */
export interface HiddenTree {
  path: string;
  what: string;
}

/** The policy one file call runs under; every path in it is a real path (symlinks resolved). */
export interface FsPolicy {
  mode: SandboxMode;
  /** Real path of the workspace root; set for the confined modes. */
  workspaceRoot?: string;
  hidden: readonly HiddenTree[];
  /**
   * Set when the daemon runs as root and the mode is confined: a confined command runs without
   * capabilities (`--cap-drop ALL`), so a file method checks a file's mode bits as such a process
   * would, instead of reading whatever root may.
   */
  withoutCapabilities?: { uid: number; groups: readonly number[] };
}

/** The owner, group and mode of a file, as `fstat` reports them. */
export interface FileOwnership {
  uid: number;
  gid: number;
  mode: number;
}

/**
 * Why a process of `identity` without capabilities could not `access` a file, or undefined when
 * it could: the owner's bits when it owns the file, else the group's when it is in the group, else
 * the others' (what the kernel checks once CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH are dropped).
 */
export function permissionRefusal(
  identity: { uid: number; groups: readonly number[] },
  file: FileOwnership,
  access: FsAccess,
): string | undefined {
  const bit = access === 'read' ? 0o4 : 0o2;
  const shift = file.uid === identity.uid ? 6 : identity.groups.includes(file.gid) ? 3 : 0;
  if ((file.mode >> shift) & bit) return undefined;
  return `mode ${(file.mode & 0o7777).toString(8).padStart(4, '0')} (uid ${file.uid}, gid ${file.gid}) does not let a confined command ${access} it, so neither may this call`;
}

/** What a call does at a path. */
export type FsAccess = 'read' | 'write';

/** The request's path made absolute against the session's cwd, with `.` and `..` folded lexically. */
export function resolveRequestPath(cwd: string, path: string): string {
  return isAbsolute(path) ? normalize(path) : resolve(cwd, path);
}

/** True when `path` is `root` or lies beneath it. Both are absolute and normalized. */
export function isWithin(root: string, path: string): boolean {
  if (root === sep) return path.startsWith(sep);
  return path === root || path.startsWith(root + sep);
}

/** Why `access` to the real path `real` is refused, or undefined when it is allowed. */
export function refusal(policy: FsPolicy, real: string, access: FsAccess): string | undefined {
  const hidden = policy.hidden.find((tree) => isWithin(tree.path, real));
  if (hidden) return `${real} is inside ${hidden.what} ${hidden.path}, which no file method may reach`;
  if (access === 'read') return undefined;
  if (policy.mode === 'read-only') return 'the read-only sandbox refuses every write';
  if (policy.mode === 'workspace-write') {
    const root = policy.workspaceRoot ?? sep;
    if (!isWithin(root, real))
      return `${real} is outside the workspace root ${root} (workspace-write writes only beneath it)`;
  }
  return undefined;
}

/** Why removing or moving the tree at `real` is refused: it holds a hidden tree. */
export function subtreeRefusal(policy: FsPolicy, real: string): string | undefined {
  const held = policy.hidden.find((tree) => isWithin(real, tree.path));
  return held && `${real} holds ${held.what} ${held.path}, which no file method may reach`;
}

/** True when a listing or a watch must leave `real` out. */
export function isHidden(policy: FsPolicy, real: string): boolean {
  return policy.hidden.some((tree) => isWithin(tree.path, real));
}
