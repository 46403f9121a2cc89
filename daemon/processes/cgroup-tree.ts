/**
 * The daemon's cgroup directories: where this process's cgroups are mounted, the names of a state
 * dir's session and unit cgroups below them, and listing and removing them.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import type { CgroupLayout } from '../limits/limit-backend.js';

/** The cgroup a process is in, for one hierarchy: its directory, when it is mounted here. */
export interface CgroupHome {
  dir: string;
  /** `cgroup2`, or the v1 controller. */
  kind: string;
}

/**
 * The directories of this process's cgroups that are mounted, v2 first, then the v1 `pids` and
 * `freezer` hierarchies (those that neither a systemd nor a resource limit depends on).
 */
export function cgroupHomes(kinds?: readonly string[]): CgroupHome[] {
  try {
    return parseCgroupHomes(
      readFileSync('/proc/self/cgroup', 'utf8'),
      readFileSync('/proc/self/mountinfo', 'utf8'),
      kinds,
    );
  } catch {
    return [];
  }
}

/**
 * The mounted cgroup directories of a process from its `/proc/<pid>/cgroup` and
 * `/proc/<pid>/mountinfo` texts (pure): v2 first, then the v1 `pids` and `freezer` hierarchies
 * (or the `kinds` asked for, in that order). A mount that shows only part of a hierarchy (a
 * container without a cgroup namespace) counts when the process's path lies below the mount's root.
 */
export function parseCgroupHomes(
  own: string,
  mountinfo: string,
  kinds: readonly string[] = ['cgroup2', 'pids', 'freezer'],
): CgroupHome[] {
  const paths = new Map<string, string>();
  for (const line of own.split('\n')) {
    const match = /^(\d+):([^:]*):(.*)$/.exec(line);
    if (!match) continue;
    if (match[1] === '0' && match[2] === '') paths.set('cgroup2', match[3]!);
    for (const controller of match[2]!.split(',')) if (controller) paths.set(controller, match[3]!);
  }
  const homes: CgroupHome[] = [];
  for (const kind of kinds) {
    const path = paths.get(kind);
    if (path === undefined) continue;
    for (const line of mountinfo.split('\n')) {
      // id parent major:minor root mountpoint options… - fstype source superoptions
      const [left, right] = line.split(' - ');
      if (!left || !right) continue;
      const fields = left.split(' ');
      const [fstype, , superOptions = ''] = right.split(' ');
      const root = fields[3]!;
      const mountPoint = fields[4]!;
      const matches =
        kind === 'cgroup2' ? fstype === 'cgroup2' : fstype === 'cgroup' && superOptions.split(',').includes(kind);
      if (!matches) continue;
      // The mount shows the hierarchy from `root` down: the process's path must lie below it.
      if (root !== '/' && path !== root && !path.startsWith(`${root}/`)) continue;
      const relative = root === '/' ? path : path.slice(root.length);
      // `join` keeps the trailing slash of a relative path `/`.
      homes.push({ dir: relative === '/' || relative === '' ? mountPoint : join(mountPoint, relative), kind });
      break;
    }
  }
  return homes;
}

/** A file-name-safe unit or session directory name. */
export function dirName(prefix: string, id: string): string {
  return `${prefix}-${createHash('sha256').update(id).digest('hex').slice(0, 16)}`;
}

/** The names of a state dir's cgroups, below any hierarchy's home. */
export function layoutOf(stateDir: string): CgroupLayout {
  const base = dirName('execd', stateDir);
  return {
    base,
    session: (sessionId) => join(base, dirName('s', sessionId)),
    unit: (sessionId, unit) => join(base, dirName('s', sessionId), dirName('u', unit)),
  };
}

/** The v1 hierarchies resource limits use, by controller: the daemon's cgroup in each that is mounted. */
export function v1LimitHomes(): Partial<Record<string, string>> {
  const homes: Partial<Record<string, string>> = {};
  for (const home of cgroupHomes(['memory', 'cpu', 'pids', 'cpuacct'])) homes[home.kind] = home.dir;
  return homes;
}

/** Pids in one cgroup (none when it is gone). */
export function procsIn(dir: string): number[] {
  try {
    return readFileSync(join(dir, 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map(Number);
  } catch {
    return [];
  }
}

/** Pids in a cgroup and every cgroup below it. */
export function procsBelow(dir: string): number[] {
  const pids = procsIn(dir);
  for (const sub of subdirs(dir)) pids.push(...procsBelow(join(dir, sub)));
  return pids;
}

/** The child cgroups of a cgroup directory. */
export function subdirs(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
  } catch {
    return [];
  }
}

/**
 * Removes a cgroup directory and those below it, deepest first; a populated one stays. False when
 * one stayed (EBUSY: a process is still in it).
 */
export function removeEmpty(dir: string): boolean {
  // A unit has no cgroup below it unless its command made one: one rmdir, no listing (a listing of
  // a cgroup directory costs ~0.1 ms, at the end of every run).
  if (tryRmdir(dir) !== 'EBUSY') return true;
  let removed = true;
  for (const sub of subdirs(dir)) removed = removeEmpty(join(dir, sub)) && removed;
  return removed && tryRmdir(dir) !== 'EBUSY';
}

/** rmdir; the error code when it failed (ENOENT: it was gone already). */
function tryRmdir(dir: string): string | undefined {
  try {
    rmdirSync(dir);
    return undefined;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'EIO';
    return code === 'ENOENT' ? undefined : code === 'ENOTEMPTY' ? 'EBUSY' : code;
  }
}
