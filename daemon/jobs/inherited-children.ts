/**
 * Jobs handed across an upgrade in place stay children of the daemon's process (same pid), but the
 * new program's libuv never started them and so never reaps them: their exits wait, as zombies,
 * for this probe's `waitpid`, and their real exit status settles them (`completed` with its code,
 * `killed` with its signal) instead of `lost`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { constants } from 'node:os';
import { groupProbe, type AdoptedProbe } from './adopt.js';
import { reapNoHang } from '../host/libc.js';

/** A signal's name by its number (`SIGKILL` for 9), as a job reports it. */
function signalName(signal: number): string {
  const entry = Object.entries(constants.signals).find(([, number]) => number === signal);
  return entry?.[0] ?? `signal ${signal}`;
}

/**
 * The probe of an adopted job that is this process's child: reaps it once it has ended and settles
 * it with its status. Should it turn out no child (reaped elsewhere), its group is followed as any
 * adopted job's.
 */
export const childProbe: AdoptedProbe = (job, killRequested) => {
  const reaped = reapNoHang(job.pid);
  if (reaped === 'running') return 'running';
  if (reaped === 'not-a-child' || 'error' in reaped) return groupProbe(job, killRequested);
  const { exitCode, signal } = reaped.status;
  return { kind: 'exit', exitCode, signal: signal === null ? null : signalName(signal), killRequested };
};

/** How often the inherited children that are no job are reaped. */
const STRAY_REAP_MS = 1_000;

/** This process's children, from `/proc/self/task/<tid>/children`; empty where that is not readable. */
export function ownChildren(): number[] {
  const pids: number[] = [];
  try {
    for (const task of readdirSync('/proc/self/task'))
      for (const pid of readFileSync(`/proc/self/task/${task}/children`, 'utf8').split(/\s+/))
        if (pid !== '') pids.push(Number(pid));
  } catch {
    // No /proc, or a kernel without the children files: nothing is known.
  }
  return pids;
}

/**
 * The children a program an upgrade in place started inherited that are no kept job (a job's
 * descendant orphaned while the daemon was its subreaper): reaped whenever they end, or they would
 * stay zombies, since libuv reaps only what it spawned. `inherited` is `ownChildren()` taken before
 * this program spawned anything, so no child of its own is among them; the timer ends with the last.
 */
export function reapStrayChildren(inherited: readonly number[], jobPids: ReadonlySet<number>): void {
  const strays = new Set(inherited.filter((pid) => !jobPids.has(pid)));
  if (strays.size === 0) return;
  const reap = () => {
    for (const pid of strays) if (reapNoHang(pid) !== 'running') strays.delete(pid);
    if (strays.size === 0) clearInterval(timer);
  };
  const timer = setInterval(reap, STRAY_REAP_MS);
  timer.unref();
  reap();
}
