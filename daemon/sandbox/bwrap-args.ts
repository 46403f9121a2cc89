/**
 * The bubblewrap command line of a confined run (docs/sandbox.md), as a pure function of the plan.
 *
 * Layout, in mount order (a later mount covers an earlier one):
 * 1. the whole filesystem read-only, a fresh `/dev` and `/proc`, a private writable `/tmp`;
 * 2. the working directory read-only again when the private `/tmp` hid it;
 * 3. `workspace-write`: the workspace root writable;
 * 4. the daemon's socket and state directories masked by empty tmpfs mounts, so the command can
 *    neither read the token nor connect to the socket (also to ones created later), and each secret
 *    file it was given (the TLS key and certificate) covered by `/dev/null` (bwrap binds it nodev,
 *    so opening the covered path fails with EACCES);
 * 5. the session's own spill directory read-only again, so the paths a result names stay readable;
 * 6. the masks remounted read-only.
 *
 * `--unshare-pid` gives the command its own `/proc`, so it cannot reach the daemon's files through
 * `/proc/<pid>/root`; `--cap-drop ALL` keeps a root daemon's commands from remounting the
 * read-only binds. `--new-session` is left out on purpose: it would move the command out of the
 * process group the daemon kills, and the command has no controlling terminal to protect (the
 * daemon starts it in a new session of its own). `--die-with-parent` is left out so that a
 * confined job outlives a daemon crash exactly like an unconfined one (the restarted daemon
 * kills it from the journal).
 */
import { isAbsolute, relative } from 'node:path';
import type { ConfinedMode } from './modes.js';

/** The private writable temp dir every confined command gets. */
export const PRIVATE_TMP = '/tmp';

/** Everything the bwrap command line depends on. */
export interface SandboxPlan {
  mode: ConfinedMode;
  /** Absolute path of the bwrap executable (or a name looked up on PATH). */
  bwrapPath: string;
  workspaceRoot: string;
  workdir: string;
  /** Directories hidden from the command (the daemon's socket and state directories). */
  hiddenDirs: string[];
  /** Files hidden from the command (the TLS key and certificate): each covered by `/dev/null`, which cannot be opened there. */
  hiddenFiles: string[];
  /** Directories inside hidden ones that stay readable (the session's spill directory). */
  readableDirs: string[];
  /** `off`: the command gets a network namespace of its own, with only a loopback that is down. */
  network: 'on' | 'off';
}

/** True when `path` is `dir` or lies below it. */
export function isInside(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/**
 * The hidden directories that need a mask of their own: one inside another (the state dir inside
 * the socket's directory, or the reverse) is hidden by the outer mask already, and a mask of its
 * own would leave a remount of a place that is no longer a mount point (bwrap: "Can't remount
 * readonly").
 */
export function outermost(dirs: string[]): string[] {
  return dirs.filter((dir, i) => !dirs.some((other, j) => j !== i && isInside(dir, other) && (dir !== other || j < i)));
}

/** The full argv: bwrap, its options, then `inner` (the same `bash -c` an unconfined run spawns). */
export function bwrapArgv(plan: SandboxPlan, inner: string[]): string[] {
  const hiddenDirs = outermost(plan.hiddenDirs);
  const args = [plan.bwrapPath, '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc'];
  args.push('--unshare-pid', '--cap-drop', 'ALL', '--tmpfs', PRIVATE_TMP);
  if (plan.network === 'off') args.push('--unshare-net');
  if (isInside(plan.workdir, PRIVATE_TMP)) args.push('--ro-bind', plan.workdir, plan.workdir);
  if (plan.mode === 'workspace-write') args.push('--bind', plan.workspaceRoot, plan.workspaceRoot);
  for (const dir of hiddenDirs) args.push('--tmpfs', dir);
  for (const file of plan.hiddenFiles) args.push('--ro-bind', '/dev/null', file);
  for (const dir of plan.readableDirs) args.push('--ro-bind', dir, dir);
  // Read-only only now: bwrap creates the readable dirs' mount points inside the masks first.
  for (const dir of hiddenDirs) args.push('--remount-ro', dir);
  args.push('--chdir', plan.workdir, '--', ...inner);
  return args;
}
