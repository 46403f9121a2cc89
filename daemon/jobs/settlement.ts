/**
 * The end of a job's status machine (docs/jobs.md): how an outcome becomes `completed`, `killed`,
 * `failed` or `lost` (an end no daemon saw: an adopted job's) with its detail. Pure; a spawn failure is never reported as a kill.
 */
import type { JobStatus } from '../../protocol/types.js';

/** Detail of a job that was running when its daemon died. */
export const DAEMON_RESTARTED_DETAIL = 'daemon restarted while the job was running';
/** The detail of a job that ended by itself after a daemon adopted it (no exit status to report). */
export const ADOPTED_ENDED_DETAIL =
  'ended after a daemon restart (exit status unknown: only the daemon that started it could observe it)';

/** How a job ended, as the executor saw it. */
export type JobOutcome =
  /**
   * The process ended; `killRequested` when execd had asked it to stop. `outputNote` says what
   * went wrong with its log files (`stderr: output could not be saved: ENOSPC: …`).
   */
  | {
      kind: 'exit';
      exitCode: number | null;
      signal: string | null;
      killRequested: boolean;
      outputNote?: string;
    }
  /** Starting it failed after it entered the table (a log file, the journal, a refused argument). */
  | { kind: 'start-failed'; reason: string }
  /** Following its process failed; the process was killed. */
  | { kind: 'watch-failed'; reason: string }
  /** The process never started. */
  | { kind: 'spawn-failed'; reason: string }
  /** The sandbox runner failed before the command ran. */
  | { kind: 'runner-failed'; reason: string }
  /** The daemon died while the job ran; found on replay of the journal. */
  | { kind: 'daemon-restarted' }
  /** The process could no longer be followed (its spawner process died) and was killed. */
  | { kind: 'lost'; reason: string }
  /** A job adopted after a restart ended: its exit status was its earlier daemon's to observe. */
  | { kind: 'adopted-ended'; killRequested: boolean };

/** A settled status and its detail. */
export interface Settlement {
  status: Extract<JobStatus, 'completed' | 'killed' | 'failed' | 'lost'>;
  detail: string;
}

/**
 * The settled status of an outcome. A process that died of a signal was killed, whoever sent it;
 * one that exited with a code after execd asked it to stop (it trapped SIGTERM) was killed before
 * it could exit by itself; any other exit is `completed`, whatever its code.
 */
export function settlementOf(outcome: JobOutcome): Settlement {
  switch (outcome.kind) {
    case 'exit': {
      const note = outcome.outputNote === undefined ? '' : `; ${outcome.outputNote}`;
      if (outcome.signal !== null) return { status: 'killed', detail: `signal: ${outcome.signal}${note}` };
      if (outcome.killRequested) return { status: 'killed', detail: `killed before exit${note}` };
      return { status: 'completed', detail: `exit code: ${outcome.exitCode ?? 0}${note}` };
    }
    case 'start-failed':
      return { status: 'failed', detail: `start failed: ${outcome.reason}` };
    case 'watch-failed':
      return { status: 'failed', detail: `following the process failed (it was killed): ${outcome.reason}` };
    case 'spawn-failed':
      return { status: 'failed', detail: `spawn failed: ${outcome.reason}` };
    case 'runner-failed':
      return { status: 'failed', detail: `sandbox runner failed: ${outcome.reason}` };
    case 'daemon-restarted':
      return { status: 'failed', detail: DAEMON_RESTARTED_DETAIL };
    case 'lost':
      return { status: 'failed', detail: outcome.reason };
    case 'adopted-ended':
      return outcome.killRequested
        ? { status: 'killed', detail: 'killed after a daemon restart' }
        : { status: 'lost', detail: ADOPTED_ENDED_DETAIL };
  }
}
