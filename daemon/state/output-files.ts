/**
 * `output/read` (docs/jobs.md): a client that cannot open the daemon's files (another container,
 * another host) pages through every spill and log file the daemon reported to its session — and
 * through nothing else. A path is readable when it is, character for character, a foreground
 * run's spill path answered to that session (or, after a restart, left in its spill directory by
 * an earlier daemon) or a log file of one of the session's jobs; the file opened must be that very
 * file (no symlink, no second link, nothing swapped in since).
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, type Stats } from 'node:fs';
import { dirname, normalize } from 'node:path';
import { ExecdError } from '../../protocol/errors.js';
import type { OutputReadResult } from '../../protocol/types.js';
import { readAt } from '../../spill/file-capture.js';
import { openSpillFiles } from '../../spill/spill-file.js';
import type { DaemonContext } from '../context.js';
import { sessionSpillDir } from '../sessions/session-lifecycle.js';
import { decodePage } from '../jobs/stream-read.js';

/** Records spill paths answered to a session, so that `output/read` may open them later. */
export function recordReportedOutputs(
  daemon: DaemonContext,
  sessionId: string,
  paths: ReadonlyArray<string | undefined>,
): void {
  const session = daemon.sessions.get(sessionId);
  if (!session) return;
  for (const path of paths) if (path !== undefined) session.reportedOutputs.add(path);
}

/**
 * True when `path` was reported to the session: a run's spill file or a log file of one of its
 * jobs — or a file in the session's own spill directory that an earlier daemon wrote (last
 * modified before this one started). The list of reported run files lives in memory and is gone
 * after a restart; what an earlier daemon left in the session's directory was the session's
 * output, and its runs are the only ones that could have reported it.
 */
function reportedTo(daemon: DaemonContext, sessionId: string, path: string): boolean {
  if (daemon.sessions.get(sessionId)?.reportedOutputs.has(path)) return true;
  const ofJob = daemon.jobs.list(sessionId).some((job) => {
    const { stdout, stderr } = job.identity.logPaths;
    return path === stdout || path === stderr;
  });
  if (ofJob) return true;
  if (dirname(path) !== sessionSpillDir(daemon, sessionId)) return false;
  const stats = lstatOrNone(path);
  return stats !== undefined && stats.isFile() && stats.mtimeMs < daemon.startedAt.getTime();
}

const forbidden = (path: string, sessionId: string, why: string) =>
  new ExecdError('FORBIDDEN', `output/read of ${path} refused: ${why} (session ${sessionId})`);

const removed = (path: string) =>
  new ExecdError(
    'OUTPUT_REMOVED',
    `output file ${path} no longer exists: it was removed by the retention sweep, job/release, job/clean or session/close, or deleted when it passed maxSpillBytes`,
  );

/** `lstat`, or undefined when nothing is there. */
function lstatOrNone(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

/**
 * Opens a reported file for reading, refusing anything that is not that plain file: a symlink in
 * its place or in place of its directories, a file with a second hard link, or a file swapped
 * between the open and the check. Returns the descriptor and its size.
 */
function openReported(path: string, sessionId: string): { fd: number; size: number } | ExecdError {
  const dir = dirname(path);
  for (const ancestor of [dir, dirname(dir)]) {
    const stats = lstatOrNone(ancestor);
    if (!stats) return removed(path);
    if (!stats.isDirectory()) return forbidden(path, sessionId, `${ancestor} is not a plain directory`);
  }
  let fd: number;
  try {
    // Windows has no O_NOFOLLOW (nor O_NONBLOCK), whatever the types say: there the identity check
    // below is what refuses a file swapped in.
    const { O_NOFOLLOW = 0, O_NONBLOCK = 0 } = constants as Partial<typeof constants>;
    fd = openSync(path, constants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return removed(path);
    return forbidden(path, sessionId, code === 'ELOOP' ? 'it is a symbolic link' : `it cannot be opened (${code})`);
  }
  const opened = fstatSync(fd);
  const atPath = lstatOrNone(path);
  const same = atPath !== undefined && atPath.ino === opened.ino && atPath.dev === opened.dev;
  if (!opened.isFile() || opened.nlink !== 1 || !same) {
    closeSync(fd);
    return forbidden(path, sessionId, 'it is not the file the daemon wrote');
  }
  return { fd, size: opened.size };
}

/** One page of a reported file, cut on character boundaries. */
export function readOutput(
  daemon: DaemonContext,
  params: { sessionId: string; path: string; offset?: number; maxBytes: number; encoding?: 'text' | 'base64' },
): OutputReadResult | ExecdError {
  const { sessionId, path } = params;
  if (normalize(path) !== path) return forbidden(path, sessionId, 'the path is not in normal form');
  if (!reportedTo(daemon, sessionId, path)) return forbidden(path, sessionId, 'not a file reported to this session');
  const opened = openReported(path, sessionId);
  if (opened instanceof ExecdError) return opened;
  try {
    const { fd, size } = opened;
    const from = Math.min(params.offset ?? 0, size);
    const bytes = readAt(fd, from, Math.min(size, from + params.maxBytes));
    if (params.encoding === 'base64') {
      // Bytes as they are: a page may end anywhere, the next one starts there.
      const nextOffset = from + bytes.length;
      return { text: '', data: bytes.toString('base64'), offset: from, nextOffset, eof: nextOffset >= size, size };
    }
    // A file still being written may get the rest of a character cut at its end.
    const complete = from + bytes.length >= size && !openSpillFiles.has(path);
    const page = decodePage(bytes, from, complete);
    return { text: page.text, offset: page.offset, nextOffset: page.nextOffset, eof: page.nextOffset >= size, size };
  } finally {
    closeSync(opened.fd);
  }
}
