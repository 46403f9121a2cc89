/**
 * The Landlock ruleset of a confined run (docs/sandbox-backends.md), as pure functions of the plan.
 *
 * Landlock can only allow: a rule grants rights beneath a directory, never takes them away below
 * it. To keep the daemon's state and socket directories (and so other sessions' spill
 * directories) out of reach, a granted directory that contains one of them is not granted itself:
 * each of its entries is, recursively, except the entry that leads to the hidden directory.
 * Symbolic links get no rule: the kernel checks the file a link resolves to, under its own path.
 * An entry created later directly in such an expanded directory is therefore not reachable
 * either; that is the price of allow-only rules, and it only concerns the ancestors of the hidden
 * directories.
 */
import { isInside } from './bwrap-args.js';

/** Landlock filesystem access rights (include/uapi/linux/landlock.h). */
export const FS = {
  EXECUTE: 1 << 0,
  WRITE_FILE: 1 << 1,
  READ_FILE: 1 << 2,
  READ_DIR: 1 << 3,
  REMOVE_DIR: 1 << 4,
  REMOVE_FILE: 1 << 5,
  MAKE_CHAR: 1 << 6,
  MAKE_DIR: 1 << 7,
  MAKE_REG: 1 << 8,
  MAKE_SOCK: 1 << 9,
  MAKE_FIFO: 1 << 10,
  MAKE_BLOCK: 1 << 11,
  MAKE_SYM: 1 << 12,
  REFER: 1 << 13,
  TRUNCATE: 1 << 14,
} as const;

/** Landlock network access rights (ABI 4). */
export const NET = { BIND_TCP: 1 << 0, CONNECT_TCP: 1 << 1 } as const;

/** Landlock scopes (ABI 6): no connecting to abstract sockets, no signals, outside the domain. */
export const SCOPE = { ABSTRACT_UNIX_SOCKET: 1 << 0, SIGNAL: 1 << 1 } as const;

/** The first ABI that restricts TCP. */
export const NET_ABI = 4;

/** The rights that apply to a file (not a directory); any other right on a file is EINVAL. */
const FILE_RIGHTS = FS.EXECUTE | FS.WRITE_FILE | FS.READ_FILE | FS.TRUNCATE;

/** What a granted place may be used for (`list`: its directories listed, no file opened). */
export type GrantKind = 'read' | 'write' | 'device' | 'list';

/** Rights of each kind of grant, before masking by ABI and file type. */
const RIGHTS: Record<GrantKind, number> = {
  read: FS.EXECUTE | FS.READ_FILE | FS.READ_DIR,
  write:
    FS.EXECUTE |
    FS.READ_FILE |
    FS.READ_DIR |
    FS.WRITE_FILE |
    FS.REMOVE_DIR |
    FS.REMOVE_FILE |
    FS.MAKE_DIR |
    FS.MAKE_REG |
    FS.MAKE_SOCK |
    FS.MAKE_FIFO |
    FS.MAKE_SYM |
    FS.REFER |
    FS.TRUNCATE,
  device: FS.READ_FILE | FS.WRITE_FILE | FS.TRUNCATE | FS.READ_DIR,
  list: FS.READ_DIR,
};

/** Every filesystem right the kernel of `abi` knows; the ruleset handles all of them. */
export function handledFs(abi: number): number {
  let rights = (1 << 13) - 1;
  if (abi >= 2) rights |= FS.REFER;
  if (abi >= 3) rights |= FS.TRUNCATE;
  return rights;
}

/** The rights of one rule, masked to what the ABI handles and what the file type accepts. */
export function ruleRights(kind: GrantKind, isDir: boolean, abi: number): number {
  const rights = RIGHTS[kind] & handledFs(abi);
  return isDir ? rights : rights & FILE_RIGHTS;
}

/** What the launcher is told to confine a command to. */
export interface LandlockPlan {
  /** Directories readable (and executable) beneath. */
  read: string[];
  /** Directories writable beneath. */
  write: string[];
  /** Device files the command may read and write in every mode (`/dev/null`, its terminal…). */
  devices: string[];
  /** Directories that no grant may reach (state and socket directories). */
  hidden: string[];
  /** Directories inside hidden ones that stay readable (the session's spill directory). */
  readable: string[];
  /** Directories inside hidden ones that are writable (the session's private temp dir in `workspace-write`). */
  ownWrite?: string[];
  /** Directories inside hidden ones that may be listed only (`/dev`: its names, none of its files). */
  listable?: string[];
  /** `off`: every TCP connect and bind is refused. */
  network: 'on' | 'off';
}

/** One rule of the ruleset. */
export interface Grant {
  path: string;
  kind: GrantKind;
}

/** One directory entry, as the expansion needs it. */
export interface Entry {
  name: string;
  type: 'dir' | 'symlink' | 'other';
}

/** Lists a directory; an unreadable one lists nothing. */
export type ListDir = (dir: string) => Entry[];

/**
 * The grants of `path` (a directory, or a file when `isDir` is false) that keep every hidden
 * directory out of reach: the path itself when no hidden directory lies beneath it, nothing when
 * it lies inside one, else its entries, recursively.
 */
export function expandGrant(path: string, kind: GrantKind, hidden: string[], list: ListDir): Grant[] {
  if (hidden.some((dir) => isInside(path, dir))) return [];
  if (!hidden.some((dir) => isInside(dir, path))) return [{ path, kind }];
  const grants: Grant[] = [];
  for (const entry of list(path)) {
    if (entry.type === 'symlink') continue;
    const child = path === '/' ? `/${entry.name}` : `${path}/${entry.name}`;
    grants.push(...expandGrant(child, kind, hidden, list));
  }
  return grants;
}

/** Every rule of a plan: reads and writes expanded around the hidden directories, then the rest. */
export function planGrants(plan: LandlockPlan, list: ListDir): Grant[] {
  return [
    ...plan.read.flatMap((dir) => expandGrant(dir, 'read', plan.hidden, list)),
    ...plan.write.flatMap((dir) => expandGrant(dir, 'write', plan.hidden, list)),
    ...plan.readable.map((path): Grant => ({ path, kind: 'read' })),
    ...(plan.ownWrite ?? []).map((path): Grant => ({ path, kind: 'write' })),
    ...(plan.listable ?? []).map((path): Grant => ({ path, kind: 'list' })),
    ...plan.devices.map((path): Grant => ({ path, kind: 'device' })),
  ];
}

/** The environment variable prefix that carries the command's environment to the launcher. */
export const ENV_CHUNK_PREFIX = 'EXECD_LANDLOCK_ENV_';

/** Below the kernel's limit of one environment string (128 KiB), with room for the name. */
const ENV_CHUNK_CHARS = 100_000;

/** The launcher's whole environment: the command's, as JSON in chunks, and nothing else. */
export function launcherEnv(env: Record<string, string>): Record<string, string> {
  const json = JSON.stringify(env);
  const chunks: Record<string, string> = {};
  for (let n = 0; n * ENV_CHUNK_CHARS < json.length; n++)
    chunks[`${ENV_CHUNK_PREFIX}${n}`] = json.slice(n * ENV_CHUNK_CHARS, (n + 1) * ENV_CHUNK_CHARS);
  return chunks;
}
