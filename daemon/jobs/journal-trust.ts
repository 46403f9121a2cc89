/**
 * What a restarted daemon checks of a journal record before it acts on it. The journal is written
 * only by the daemon's user, but a damaged or hand-edited file must never make the daemon read or
 * delete a file outside its spill directory, nor signal a process it did not start (the process
 * checks are in recovery.ts, made against `/proc` when a signal is due).
 */
import { lstatSync } from 'node:fs';
import { basename, dirname, normalize, resolve } from 'node:path';
import { signallable } from '../processes/group-signals.js';
import type { JobRecord } from './journal-entries.js';

/**
 * Why a job's log path cannot be trusted, or undefined when it can. A job's logs are
 * `<spill>/<session dir>/<id>.stdout|.stderr`, written by the daemon: the path must have exactly
 * that shape (no `..`, no other directory), the session directory must be a real directory, and
 * the file, when it exists, a regular file of the daemon's user with one link (a symlink or a hard
 * link planted there would lead to someone else's file).
 */
export function untrustedLogPath(
  path: string,
  id: string,
  stream: 'stdout' | 'stderr',
  spillRoot: string,
): string | undefined {
  // Normal (no `.`, `..` or doubled separator); relative only when the state dir was given so.
  if (normalize(path) !== path) return 'not a normal path';
  if (dirname(dirname(resolve(path))) !== resolve(spillRoot)) return 'outside the spill directory';
  if (basename(path) !== `${id}.${stream}`) return 'not named for its job';
  const dir = lstatQuiet(dirname(path));
  if (dir !== undefined && !dir.isDirectory()) return 'session directory is not a directory';
  const file = lstatQuiet(path);
  if (file === undefined) return undefined;
  if (!file.isFile()) return 'not a regular file';
  if (file.nlink !== 1) return 'has more than one link';
  const uid = process.getuid?.();
  if (uid !== undefined && file.uid !== uid) return "not the daemon user's file";
  return undefined;
}

/**
 * Why a journal record cannot be used at all, or undefined when it can: its log paths, and for a
 * job still holding a process, a pid that could name one process group.
 */
export function untrustedJobRecord(record: JobRecord, spillRoot: string): string | undefined {
  const live = record.status === 'running' || record.status === 'stopping';
  if (live && record.pid !== 0 && !signallable(record.pid)) return 'pid cannot be a job of this daemon';
  for (const stream of ['stdout', 'stderr'] as const) {
    const path = stream === 'stdout' ? record.stdoutPath : record.stderrPath;
    const why = untrustedLogPath(path, record.id, stream, spillRoot);
    if (why !== undefined) return `${stream} log ${why}`;
  }
  return undefined;
}

function lstatQuiet(path: string): ReturnType<typeof lstatSync> | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}
