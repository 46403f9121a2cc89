/** Exit codes of the CLI (docs/cli.md): the command's own, 124 after a timeout, 128+n after signal n. */
import { constants } from 'node:os';
import type { JobSnapshot } from '../../protocol/types.js';
import { EXIT_EXECD_ERROR } from './errors.js';

/** Exit code after a timeout (as coreutils' `timeout`). */
export const EXIT_TIMEOUT = 124;

/** 128 + the signal's number, as a shell reports a death by signal. */
export function signalExitCode(signal: string): number {
  const number = (constants.signals as Partial<Record<string, number>>)[signal];
  return number === undefined ? EXIT_EXECD_ERROR : 128 + number;
}

/**
 * The exit code that stands for a job's outcome, as its record has it: a killed job that died of
 * the signal gives 128+n, one that trapped it and exited gives that exit code; a job still running
 * counts as a timeout of the wait.
 */
export function jobExitCode(job: JobSnapshot): number {
  switch (job.status) {
    case 'completed':
      return job.exitCode ?? EXIT_EXECD_ERROR;
    case 'killed':
      if (job.signal) return signalExitCode(job.signal);
      return job.exitCode ?? signalExitCode('SIGKILL');
    case 'failed':
    case 'lost':
      return EXIT_EXECD_ERROR;
    case 'running':
    case 'stopping':
      return EXIT_TIMEOUT;
  }
}
