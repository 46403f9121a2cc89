/**
 * Closing a session: abort its runs, kill its leftovers, delete its spill files, forget it.
 */
import { createHash } from 'node:crypto';
import { lstat, readdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { SESSION_ID_PATTERN } from '../../protocol/fields.js';
import type { SessionCloseResult } from '../../protocol/types.js';
import type { DaemonContext } from '../context.js';
import { releaseSessionFiles } from '../fs/service.js';
import { endSessionJobs } from '../jobs/job-control.js';

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
 * The private temp dir of one session (its confined commands' `TMPDIR` under Landlock): a direct
 * child of `<stateDir>/tmp`, inside the state dir that confined commands cannot reach, so only the
 * session's own commands are granted it.
 */
export function sessionTempDir(daemon: DaemonContext, sessionId: string): string {
  const root = join(daemon.stateDir, 'tmp');
  const dir = join(root, sessionDirName(sessionId));
  if (dirname(dir) !== root) throw new Error(`session directory escapes the temp root: ${sessionId}`);
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
  daemon.requestKeys.forgetSession(sessionId);
  const graceMs = daemon.config.get().graceMs;
  await daemon.runs.abortWhere((run) => run.sessionId === sessionId);
  await releaseSessionFiles(daemon, sessionId);
  const [killedJobs, closedTerminals] = await Promise.all([
    endSessionJobs(daemon.jobs, sessionId, graceMs),
    daemon.terminals.closeSession(sessionId),
  ]);
  // Its leftovers, and whatever of the session left its process groups (setsid, a double fork).
  const escaped = await daemon.processes.endSession(sessionId, graceMs);
  daemon.processes.scopes.forgetSession(sessionId);
  daemon.confinedSpawners.retire(sessionId);
  const dir = sessionSpillDir(daemon, sessionId);
  const removedFiles = await countFiles(dir);
  await removeSessionDir(dir);
  await removeSessionDir(sessionTempDir(daemon, sessionId));
  daemon.log.info({ sessionId, killedJobs, closedTerminals, removedFiles, escaped }, 'session closed');
  return { killedJobs, closedTerminals, removedFiles };
}

/** What decides whether a session may be closed for idleness. */
export interface SessionIdleFacts {
  /** Connections holding it open. */
  connections: number;
  /** Its jobs that still hold a process. */
  liveJobs: number;
  /** Its process groups still alive (runs, leftovers such as a dev server started with `&`). */
  liveGroups: number;
  /** Its last activity: opened, used, left by a connection, or a job of it settled (ms). */
  lastActiveAt: number;
}

/** True when nothing holds the session and it has been quiet for `idleMs` (pure). */
export function sessionIsIdle(facts: SessionIdleFacts, now: number, idleMs: number): boolean {
  return (
    facts.connections === 0 && facts.liveJobs === 0 && facts.liveGroups === 0 && now - facts.lastActiveAt >= idleMs
  );
}

/** The idle facts of every session the daemon holds. */
function idleFacts(daemon: DaemonContext): Map<string, SessionIdleFacts> {
  const groups = daemon.processes.live();
  const facts = new Map<string, SessionIdleFacts>();
  for (const session of daemon.sessions.all()) {
    let lastActiveAt = session.lastActiveAt;
    for (const job of daemon.jobs.list(session.id))
      lastActiveAt = Math.max(lastActiveAt, job.finishedAt?.getTime() ?? Date.now());
    facts.set(session.id, {
      connections: session.connections.size,
      liveJobs: daemon.jobs.live(session.id).length,
      liveGroups:
        groups.filter((group) => group.sessionId === session.id).length + daemon.processes.escapedGroupsOf(session.id),
      lastActiveAt,
    });
  }
  return facts;
}

const MIN_IDLE_CHECK_MS = 100;
const MAX_IDLE_CHECK_MS = 60_000;

/**
 * Closes, like `session/close`, every session that no connection holds, that runs nothing and has
 * been quiet for `sessionIdleCloseMs`, so abandoned session ids never fill `maxSessions`. Checks a
 * few times per `sessionIdleCloseMs` (at most every minute); returns the stop function.
 */
export function watchIdleSessions(daemon: DaemonContext): () => void {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const schedule = () => {
    const idleMs = daemon.config.get().sessionIdleCloseMs;
    timer = setTimeout(check, Math.min(MAX_IDLE_CHECK_MS, Math.max(MIN_IDLE_CHECK_MS, idleMs / 4)));
    timer.unref();
  };
  const check = () => {
    if (stopped || daemon.shuttingDown) return;
    const idleMs = daemon.config.get().sessionIdleCloseMs;
    const now = Date.now();
    const doomed = [...idleFacts(daemon)].filter(([, facts]) => sessionIsIdle(facts, now, idleMs));
    const closing = doomed.map(async ([sessionId]) => {
      daemon.log.info({ sessionId, idleMs }, 'closing an idle session');
      await closeSession(daemon, sessionId);
    });
    Promise.all(closing)
      .catch((error: unknown) => daemon.log.error({ err: error }, 'closing an idle session failed'))
      .finally(() => {
        if (!stopped) schedule();
      });
  };
  schedule();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
