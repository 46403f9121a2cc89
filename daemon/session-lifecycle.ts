/**
 * Closing a session: abort its runs, kill its leftovers, delete its spill files, forget it.
 */
import { createHash } from 'node:crypto';
import { lstat, readdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { SESSION_ID_PATTERN } from '../protocol/fields.js';
import type { SessionCloseResult } from '../protocol/types.js';
import type { DaemonContext } from './context.js';
import { endSessionJobs } from './jobs/job-control.js';

/** Number of files below a directory (0 when it does not exist or is not a real directory). */
async function countFiles(dir: string): Promise<number> {
  try {
    if (!(await lstat(dir)).isDirectory() || !(await lstat(dirname(dir))).isDirectory()) return 0;
    const entries = await readdir(dir, { recursive: true, withFileTypes: true });
    return entries.filter((entry) => entry.isFile()).length;
  } catch {
    return 0;
  }
}

/**
 * The directory name of a session under the spill root: the id itself when it is a plain name
 * (the schema allows only `[A-Za-z0-9._:-]`, never `.` or `..`); anything else — which the schema
 * refuses, but a journal or a future caller might bring — is `=` and a hash of the id (`=` never
 * appears in an id), so no id can name the spill root, its parent, or another session's directory.
 */
export function sessionDirName(sessionId: string): string {
  if (SESSION_ID_PATTERN.test(sessionId) && sessionId !== '.' && sessionId !== '..') return sessionId;
  return `=${createHash('sha256').update(sessionId).digest('hex')}`;
}

/** The spill directory of one session: always a direct child of `<stateDir>/spill`. */
export function sessionSpillDir(daemon: DaemonContext, sessionId: string): string {
  const dir = join(daemon.paths.spill, sessionDirName(sessionId));
  // Belt and braces: the name above has no separator and is not `.`/`..`.
  if (dirname(dir) !== daemon.paths.spill) throw new Error(`session directory escapes the spill root: ${sessionId}`);
  return dir;
}

/**
 * Deletes a session's directory. A symlink planted in its place is removed itself, never followed
 * (fs.rm does not traverse symlinks); nothing is removed while the spill root itself is not a real
 * directory, since the path would lead through it.
 */
async function removeSessionDir(dir: string): Promise<void> {
  const root = await lstat(dirname(dir)).catch(() => undefined);
  if (!root?.isDirectory()) return;
  await rm(dir, { recursive: true, force: true });
}

/** Closes a session: every process it owns is gone and its files deleted when this resolves. */
export async function closeSession(daemon: DaemonContext, sessionId: string): Promise<SessionCloseResult> {
  daemon.sessions.remove(sessionId);
  const graceMs = daemon.config.get().graceMs;
  await daemon.runs.abortWhere((run) => run.sessionId === sessionId);
  const killedJobs = await endSessionJobs(daemon.jobs, sessionId, graceMs);
  await daemon.processes.killLeftovers(sessionId, graceMs);
  const dir = sessionSpillDir(daemon, sessionId);
  const removedFiles = await countFiles(dir);
  await removeSessionDir(dir);
  daemon.log.info({ sessionId, killedJobs, removedFiles }, 'session closed');
  return { killedJobs, removedFiles };
}
