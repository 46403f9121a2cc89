/**
 * Cleaning up after a crashed daemon (docs/reliability.md): the process groups of jobs it left running are
 * killed — unless the pid now belongs to another process, which the start time in `/proc` tells.
 */
import { signallable } from '../processes/group-signals.js';
import { terminateGroup } from '../processes/terminate.js';
import { HAS_PROC, liveGroupMembers, readProcStat, readProcUid, type ProcStat } from '../../shared/proc.js';
import type { Logger } from '../log/logger.js';
import type { ProcessRegistry } from '../processes/process-registry.js';
import type { Job } from './job.js';

/**
 * Whether the group led by a job's pid may still be the job's. A live leader must have the start
 * time recorded at spawn (else the pid was reused). With the leader gone, any member still in the
 * group is the job's: Linux does not reuse a pid while a process group carries its number.
 */
export function groupStillOurs(recordedStartTime: number | undefined, leader: ProcStat | undefined): boolean {
  if (leader === undefined) return true;
  return recordedStartTime !== undefined && leader.startTime === recordedStartTime;
}

/**
 * Whether a journaled job's group may be signalled or adopted: what the journal says is checked
 * against `/proc` first, since a damaged or hand-edited journal must never turn into a kill of
 * something the daemon did not start. Never pid 0 or 1 or the daemon itself; a start time recorded
 * at spawn and, for a live leader, the same one; the leader (or, once it is gone, every live
 * member) running as the daemon's user.
 */
export function journaledGroupOurs(pid: number, recordedStartTime: number | undefined): boolean {
  if (!signallable(pid) || recordedStartTime === undefined) return false;
  const leader = readProcStat(pid);
  if (!groupStillOurs(recordedStartTime, leader)) return false;
  const uid = process.getuid?.();
  if (uid === undefined) return true;
  const members = leader === undefined ? safeMembers(pid) : [pid];
  return members !== undefined && members.every((member) => (readProcUid(member) ?? uid) === uid);
}

/** The live members of a group, or undefined when /proc cannot be listed. */
function safeMembers(pgid: number): number[] | undefined {
  try {
    return liveGroupMembers(pgid);
  } catch {
    return undefined;
  }
}

/**
 * Kills, in the background, the groups of jobs a previous daemon left running. They are tracked
 * as leftovers of their session meanwhile, so a session close or shutdown waits for them too.
 */
export function killOrphanedGroups(jobs: Job[], processes: ProcessRegistry, graceMs: number, log: Logger): number {
  // Without /proc nothing proves a pid is still the job's: leave it alone.
  if (!HAS_PROC) return 0;
  let doomed = 0;
  for (const job of jobs) {
    if (!journaledGroupOurs(job.pid, job.procStartTime)) continue;
    doomed += 1;
    const group = processes.track({ pgid: job.pid, sessionId: job.ownerSession, kind: 'leftover' });
    terminateGroup(job.pid, graceMs)
      .catch((error: unknown) =>
        log.error({ jobId: job.id, pgid: job.pid, err: error }, 'killing an orphaned group failed'),
      )
      .finally(() => processes.untrack(group));
  }
  return doomed;
}
