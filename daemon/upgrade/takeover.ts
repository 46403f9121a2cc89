/**
 * The new program's side of an upgrade in place (upgrade.ts is the old one's): what it takes over
 * at start from the process it replaced — its locks, its children, the pipes of confined jobs.
 * Nothing here runs unless a handover file was given (handover.ts).
 */
import type { PlatformFacts } from '../../protocol/platform.js';
import { socketLockPath, stateLockPath } from '../../shared/ownership.js';
import { closeFd, setChildSubreaper } from '../host/libc.js';
import { isOwnChild, type AdoptedProbe } from '../jobs/adopt.js';
import { childProbe, ownChildren } from '../jobs/inherited-children.js';
import { HandedPipes, pipedChildProbe } from '../jobs/job-pipes.js';
import type { Job } from '../jobs/job.js';
import type { Logger } from '../log/logger.js';
import { handedOver, releaseOwnLocks } from './handover.js';

/**
 * After an upgrade in place the locks name this process already, and the jobs are its children
 * (with, maybe, orphans of theirs): lets go of the locks so they can be claimed as usual, stops
 * reaping orphans, and returns the children listed now, before this program spawns anything
 * ([] without a handover).
 */
export function takeOverLocksAndChildren(
  stateDir: string,
  socketPath: string,
  platform: PlatformFacts,
  log: Logger,
): number[] {
  if (!handedOver()) return [];
  const inherited = ownChildren();
  releaseOwnLocks([stateLockPath(stateDir), ...(platform.socketIsFile ? [socketLockPath(socketPath)] : [])]);
  const refused = setChildSubreaper(false);
  if (refused) log.warn({ reason: refused }, 'the daemon stays the reaper of orphans');
  return inherited;
}

/**
 * How an adopted job's end is seen: a child of this process handed across an upgrade in place is
 * reaped with its real exit status (its pipes, if handed over too, read on into its logs, and a
 * next upgrade hands them on again); another is only seen gone (undefined).
 */
export function adoptedProbe(job: Job, graceMs: number): AdoptedProbe | undefined {
  if (!isOwnChild(job.pid)) return undefined;
  const pipes = handedOver()?.pipes.filter((pipe) => pipe.jobId === job.id) ?? [];
  if (pipes.length === 0) return childProbe;
  const handed = new HandedPipes(job, pipes);
  job.detachPipes = handed.detach;
  return pipedChildProbe(handed, graceMs);
}

/** Closes the handed pipes of jobs that were not adopted (they ended meanwhile, or their record is gone). */
export function closeUnclaimedPipes(adopted: readonly Job[]): void {
  const followed = new Set(adopted.map((job) => job.id));
  for (const pipe of handedOver()?.pipes ?? []) if (!followed.has(pipe.jobId)) closeFd(pipe.fd);
}
