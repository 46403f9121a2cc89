/** `daemon/status`, `daemon/shutdown` and `daemon/upgrade`. */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { DaemonShutdown, DaemonStatus, DaemonUpgrade } from '../../protocol/methods.js';
import type { DaemonStatusResult } from '../../protocol/types.js';
import { readMemoryUse } from '../../shared/proc.js';
import { requireAdmin } from '../sessions/admin.js';
import type { Spawner } from '../executor/spawner.js';
import type { ClientConnection } from '../net/connection.js';
import { handler } from '../net/handler.js';
import type { Session } from '../sessions/sessions.js';
import type { Job } from '../jobs/job.js';
import type { DaemonContext } from '../context.js';
import { sessionSpillDir } from '../sessions/session-lifecycle.js';

/** Counts the files and bytes under the spill directory. */
async function spillUsage(dir: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  try {
    for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile()) continue;
      const info = await stat(join(entry.parentPath, entry.name)).catch(() => undefined);
      if (!info) continue;
      files += 1;
      bytes += info.size;
    }
  } catch {
    // No spill directory yet.
  }
  return { files, bytes };
}

/** The memory of the daemon and of its spawner processes (each reports its own: they are non-dumpable). */
async function memoryUse(spawner: Spawner): Promise<DaemonStatusResult['memory']> {
  const own = readMemoryUse(process.pid);
  const spawners = await spawner.memoryUse();
  return [
    ...(own ? [{ role: 'daemon' as const, ...own }] : []),
    ...spawners.map((use) => ({ role: 'spawner' as const, ...use })),
  ];
}

/** How many jobs hold a process, and how many have settled. */
function jobCounts(jobs: Job[]): { running: number; settled: number } {
  const running = jobs.filter((job) => job.isLive).length;
  return { running, settled: jobs.length - running };
}

/** Running and exited terminals of some sessions. */
function terminalCounts(daemon: DaemonContext, sessionIds: string[]): { running: number; exited: number } {
  let running = 0;
  let exited = 0;
  for (const id of sessionIds)
    for (const terminal of daemon.terminals.list(id))
      if (terminal.running) running += 1;
      else exited += 1;
  return { running, exited };
}

/** Files and bytes of several spill directories together. */
function sumUsage(usages: Array<{ files: number; bytes: number }>): { files: number; bytes: number } {
  return usages.reduce((sum, use) => ({ files: sum.files + use.files, bytes: sum.bytes + use.bytes }), {
    files: 0,
    bytes: 0,
  });
}

/** Every session for an admin connection; else only those `conn` has open. */
function visibleSessions(sessions: Session[], conn: ClientConnection): Session[] {
  return conn.admin ? sessions : sessions.filter((session) => conn.openSessions.has(session.id));
}

/** Handlers of the daemon-wide methods. */
export const daemonHandlers = [
  handler(DaemonStatus, async (_params, { daemon, conn }) => {
    const sessions = visibleSessions(daemon.sessions.all(), conn);
    // Daemon-wide counters only for an admin; a session's connection sees its own sessions' share.
    const ids = sessions.map((session) => session.id);
    const mine = conn.admin ? undefined : new Set(ids);
    const terminals = mine === undefined ? daemon.terminals.counts() : terminalCounts(daemon, ids);
    return {
      version: daemon.version,
      pid: process.pid,
      uptimeMs: Date.now() - daemon.startedAt.getTime(),
      // Other sessions (their ids, their cwds) only for an admin; else the ones this connection opened.
      sessions: sessions.map((session) => {
        const usage = daemon.processes.scopes.sessionUsage(session.id);
        return {
          sessionId: session.id,
          cwd: session.cwd,
          connections: session.connections.size,
          runningJobs: daemon.jobs.live(session.id).length,
          runningTerminals: daemon.terminals.running(session.id).length,
          ...(session.limits && { limits: session.limits }),
          ...(usage && { usage }),
        };
      }),
      jobs: jobCounts(daemon.jobs.list().filter((job) => mine === undefined || mine.has(job.ownerSession))),
      terminals,
      processes:
        mine === undefined ? daemon.processes.count : ids.reduce((sum, id) => sum + daemon.processes.countOf(id), 0),
      spawns: mine === undefined ? { ...daemon.spawner.counts } : { inline: 0, spawner: 0 },
      memory: mine === undefined ? await memoryUse(daemon.spawner) : [],
      listeners: [...daemon.listenerUrls],
      spill:
        mine === undefined
          ? await spillUsage(daemon.paths.spill)
          : sumUsage(await Promise.all(ids.map((id) => spillUsage(sessionSpillDir(daemon, id))))),
      sandbox: daemon.sandbox.current.info,
      limits: daemon.processes.scopes.limitsCapability,
      config: daemon.config.get(),
    };
  }),

  handler(DaemonShutdown, (params, { daemon, conn }) => {
    const refused = requireAdmin(conn, 'daemon/shutdown');
    if (refused) return refused;
    const keepJobs = params?.keepJobs === true;
    const reason = keepJobs ? 'daemon/shutdown keepJobs' : 'daemon/shutdown';
    // Answer first; the shutdown starts once the reply is on its way. keepJobs is noted now, so a
    // signal that comes before then still stops the daemon keeping the jobs.
    if (keepJobs) daemon.noteKeepJobs();
    setImmediate(() => daemon.requestShutdown(reason, { keepJobs }));
    return { ok: true as const };
  }),

  handler(DaemonUpgrade, (_params, { daemon, conn }) => {
    const refused = requireAdmin(conn, 'daemon/upgrade');
    if (refused) return refused;
    return daemon.requestUpgrade(conn);
  }),
];
