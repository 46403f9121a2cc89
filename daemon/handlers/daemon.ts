/** `daemon/status` and `daemon/shutdown`. */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { DaemonShutdown, DaemonStatus } from '../../protocol/methods.js';
import type { DaemonStatusResult } from '../../protocol/types.js';
import { readMemoryUse } from '../../shared/proc.js';
import { requireAdmin } from '../admin.js';
import type { Spawner } from '../executor/spawner.js';
import type { ClientConnection } from '../net/connection.js';
import { handler } from '../net/handler.js';
import type { Session } from '../sessions.js';
import type { Job } from '../jobs/job.js';

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

/** Every session for an admin connection; else only those `conn` has open. */
function visibleSessions(sessions: Session[], conn: ClientConnection): Session[] {
  return conn.admin ? sessions : sessions.filter((session) => conn.openSessions.has(session.id));
}

/** Handlers of the daemon-wide methods. */
export const daemonHandlers = [
  handler(DaemonStatus, async (_params, { daemon, conn }) => ({
    version: daemon.version,
    pid: process.pid,
    uptimeMs: Date.now() - daemon.startedAt.getTime(),
    // Other sessions (their ids, their cwds) only for an admin; else the ones this connection opened.
    sessions: visibleSessions(daemon.sessions.all(), conn).map((session) => {
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
    jobs: jobCounts(daemon.jobs.list()),
    terminals: daemon.terminals.counts(),
    processes: daemon.processes.count,
    spawns: { ...daemon.spawner.counts },
    memory: await memoryUse(daemon.spawner),
    listeners: [...daemon.listenerUrls],
    spill: await spillUsage(daemon.paths.spill),
    sandbox: daemon.sandbox.current.info,
    limits: daemon.processes.scopes.limitsCapability,
    config: daemon.config.get(),
  })),

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
];
