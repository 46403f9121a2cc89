/**
 * The exit facts of a confined command. bwrap leads the process group and exits with the status
 * of the command it wraps, except that a command killed by signal n comes back as exit status
 * 128+n (bwrap's convention). When execd itself sent the SIGTERM (timeout, cancel, job kill) and
 * the status is 128+SIGTERM, the command died of that signal, and is reported so, exactly like
 * an unconfined one. Any other 128+n stays an exit code: execd cannot tell it from `exit 128+n`.
 */
import { constants } from 'node:os';

/** The exit facts a result reports. */
export interface ExitFacts {
  exitCode: number | null;
  signal: string | null;
}

const TERM_STATUS = 128 + constants.signals.SIGTERM;

/** The exit facts of a confined run, given whether execd sent it SIGTERM. */
export function confinedExit(exit: ExitFacts, termSent: boolean): ExitFacts {
  if (termSent && exit.signal === null && exit.exitCode === TERM_STATUS) return { exitCode: null, signal: 'SIGTERM' };
  return exit;
}
