/**
 * Closing a session: abort its runs, kill its leftovers, delete its spill files, forget it.
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { SessionCloseResult } from '../protocol/types.js';
import type { DaemonContext } from './context.js';
import { endSessionJobs } from './jobs/job-control.js';

/** Number of files below a directory (0 when it does not exist). */
async function countFiles(dir: string): Promise<number> {
  try {
    const entries = await readdir(dir, { recursive: true, withFileTypes: true });
    return entries.filter((entry) => entry.isFile()).length;
  } catch {
    return 0;
  }
}

/** The spill directory of one session. */
export function sessionSpillDir(daemon: DaemonContext, sessionId: string): string {
  return join(daemon.paths.spill, sessionId);
}

/** Closes a session: every process it owns is gone and its files deleted when this resolves. */
export async function closeSession(daemon: DaemonContext, sessionId: string): Promise<SessionCloseResult> {
  daemon.sessions.remove(sessionId);
  const graceMs = daemon.config.get().graceMs;
  await daemon.runs.abortWhere((run) => run.sessionId === sessionId);
  const [killedJobs, closedTerminals] = await Promise.all([
    endSessionJobs(daemon.jobs, sessionId, graceMs),
    daemon.terminals.closeSession(sessionId),
  ]);
  await daemon.processes.killLeftovers(sessionId, graceMs);
  const dir = sessionSpillDir(daemon, sessionId);
  const removedFiles = await countFiles(dir);
  await rm(dir, { recursive: true, force: true });
  daemon.log.info({ sessionId, killedJobs, closedTerminals, removedFiles }, 'session closed');
  return { killedJobs, closedTerminals, removedFiles };
}
