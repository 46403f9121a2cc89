/**
 * Jobs a `daemon/shutdown { keepJobs }` left running (docs/reconnect.md), adopted by the next daemon on
 * the state dir. Their processes are not its children: it follows each process group by polling
 * until it is gone, kills it by its group as any job, and reads its output from the log files the
 * process still writes. Their exit status was only the earlier daemon's to observe, so a job that
 * ends by itself settles `lost` (never `completed`): its exit code is null and its detail says why.
 */
import { openSpillFiles } from '../../spill/spill-file.js';
import { groupAlive } from '../processes/group-signals.js';
import { terminateGroup } from '../processes/terminate.js';
import { HAS_PROC, readProcStat } from '../../shared/proc.js';
import type { Logger } from '../log/logger.js';
import type { ProcessRegistry } from '../processes/process-registry.js';
import type { Job } from './job.js';
import type { JobOutcome } from './settlement.js';
import { GrowingLogFileStream, LogFileStream, fileSize } from './job-streams.js';
import { journaledGroupOurs } from './recovery.js';

/** How often an adopted job's group is checked: a settlement is seen within this. */
export const ADOPTED_POLL_MS = 100;

/** What a restarted daemon can do with a job the journal marks `kept`. */
export type Adoption = 'adopt' | 'ended' | 'not-ours';

/**
 * Whether a kept job's process group can be adopted: it must still run and still be the job's
 * (the leader's `/proc` start time); without `/proc` nothing proves it, so it is not adopted.
 */
export function adoptionOf(job: Job): Adoption {
  if (!HAS_PROC || !journaledGroupOurs(job.pid, job.procStartTime)) return 'not-ours';
  // A child of this very process (handed across an upgrade in place) is adopted even as a zombie:
  // its exit status waits to be reaped here (docs/reconnect.md).
  if (isOwnChild(job.pid)) return 'adopt';
  return groupAlive(job.pid) ? 'adopt' : 'ended';
}

/** True when `pid` is a child of this process (an upgrade in place keeps the jobs its children). */
export function isOwnChild(pid: number): boolean {
  return readProcStat(pid)?.ppid === process.pid;
}

/** How an adopted job's group is checked: `running`, or the outcome it settles with. */
export type AdoptedProbe = (job: Job, killRequested: boolean) => 'running' | JobOutcome;

/** The probe of a job that is not this process's child: its end is seen, its status is not. */
export function groupProbe(job: Job, killRequested: boolean): 'running' | JobOutcome {
  return groupAlive(job.pid) ? 'running' : { kind: 'adopted-ended', killRequested };
}

/** Reads an adopted job's streams from its growing log files. */
export function growingStreams(job: Job, windowBytes: number): void {
  const { logPaths } = job.identity;
  job.streams.stdout = new GrowingLogFileStream(logPaths.stdout, job.streams.stdout.totalBytes, windowBytes);
  job.streams.stderr = new GrowingLogFileStream(logPaths.stderr, job.streams.stderr.totalBytes, windowBytes);
}

/** Follows an adopted job until its group is gone, then settles it; `job.killTree` kills the group. */
export function followAdopted(
  job: Job,
  processes: ProcessRegistry,
  windowBytes: number,
  log: Logger,
  probe: AdoptedProbe = groupProbe,
): void {
  const pgid = job.pid;
  const group = processes.track({ pgid, sessionId: job.ownerSession, kind: 'job' });
  // Its process writes its logs: the spill sweep must count them open, as a live job's.
  const logs = [job.identity.logPaths.stdout, job.identity.logPaths.stderr];
  for (const path of logs) openSpillFiles.add(path);
  let killing: Promise<void> | undefined;
  job.killTree = (graceMs) => (killing ??= terminateGroup(pgid, graceMs));
  const timer = setInterval(() => {
    const outcome = probe(job, job.killRequested || killing !== undefined);
    if (outcome === 'running') return;
    stop();
    processes.untrack(group);
    // Nothing writes the logs any more: their size is final.
    for (const name of ['stdout', 'stderr'] as const) {
      const path = job.identity.logPaths[name];
      const size = fileSize(path);
      job.streams[name] = new LogFileStream(
        size === undefined ? undefined : path,
        size ?? job.streams[name].totalBytes,
        windowBytes,
      );
    }
    job.settle(outcome);
    log.info({ jobId: job.id, pgid, status: job.status }, 'adopted job ended');
  }, ADOPTED_POLL_MS);
  timer.unref();
  const stop = () => {
    clearInterval(timer);
    for (const path of logs) openSpillFiles.delete(path);
    job.unfollow = undefined;
  };
  job.unfollow = () => {
    stop();
    processes.untrack(group);
  };
}
