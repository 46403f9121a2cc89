/**
 * Jobs handed across an upgrade in place stay children of the daemon's process (same pid), but the
 * new program's libuv never started them and so never reaps them: their exits wait, as zombies,
 * for this probe's `waitpid`, and their real exit status settles them (`completed` with its code,
 * `killed` with its signal) instead of `lost`.
 */
import { constants } from 'node:os';
import { groupProbe, type AdoptedProbe } from '../jobs/adopt.js';
import { reapNoHang } from './libc.js';

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
