/**
 * How a command's answer becomes its `CommandEnd`: pure, one function per kind of answer. The
 * result label is decided in one order: out of memory, timed out, killed, denied, then the exit
 * code (0 is `ok`, anything else `error`); a command that never ran is `error` with its code.
 */
import type { ExecdError } from '../../protocol/errors.js';
import type { TerminalRunResult } from '../../protocol/terminal.js';
import type { JobSnapshot, ShellRunResult } from '../../protocol/types.js';
import type { CommandEnd, CommandResult } from './observer.js';

/** The facts the label is decided from. */
interface ExitFacts {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  killed: boolean;
  oomKilled?: boolean;
  denied: boolean;
}

/** The result label of an ended command. */
export function resultOf(facts: ExitFacts): CommandResult {
  if (facts.oomKilled) return 'oom';
  if (facts.timedOut) return 'timeout';
  if (facts.killed || facts.signal !== null) return 'killed';
  if (facts.denied) return 'denied';
  return facts.exitCode === 0 ? 'ok' : 'error';
}

/** The end of a command that never ran: the error's stable name, no exit. */
export function failedEnd(error: ExecdError, durationMs: number): CommandEnd {
  return {
    result: 'error',
    exitCode: null,
    signal: null,
    timedOut: false,
    denied: false,
    durationMs,
    outputBytes: 0,
    error: error.name,
  };
}

/** The end of a foreground run (`shell/run`, or a `yieldMs` run that ended before it yielded). */
export function runEnd(result: ShellRunResult & { oomKilled?: boolean }, outputBytes: number): CommandEnd {
  const denied = result.sandbox?.denied === true;
  const facts = {
    exitCode: result.exitCode,
    signal: result.signal,
    timedOut: result.timedOut,
    killed: result.aborted,
    denied,
    ...(result.oomKilled !== undefined && { oomKilled: result.oomKilled }),
  };
  return {
    ...facts,
    result: resultOf(facts),
    durationMs: result.durationMs,
    outputBytes,
  };
}

/** The end of a settled background job, from its snapshot. */
export function jobEnd(job: JobSnapshot & { oomKilled?: boolean }): CommandEnd {
  const denied = job.sandbox?.denied === true;
  const finished = job.finishedAt === undefined ? Date.now() : Date.parse(job.finishedAt);
  const facts = {
    exitCode: job.exitCode,
    signal: job.signal,
    timedOut: false,
    killed: job.status === 'killed',
    denied,
    ...(job.oomKilled !== undefined && { oomKilled: job.oomKilled }),
  };
  return {
    ...facts,
    // A job that failed to start or to be followed ran no command to its end.
    result: job.status === 'failed' ? 'error' : resultOf(facts),
    durationMs: Math.max(0, finished - Date.parse(job.startedAt)),
    outputBytes: job.stdoutBytes + job.stderrBytes,
    ...(job.status === 'failed' && job.detail !== undefined && { error: 'JOB_FAILED' }),
  };
}

/**
 * The end of a `terminal/run`. `timed_out` is a timeout and `exited` (the terminal's program
 * ended) a kill; a run that returned while its command waits for input, went idle or left the
 * prompt counts `ok`: the call did what it was asked, the command goes on in the terminal.
 */
export function terminalRunEnd(result: TerminalRunResult, durationMs: number): CommandEnd {
  const facts = {
    exitCode: result.exitCode ?? null,
    signal: null,
    timedOut: result.state === 'timed_out',
    killed: result.state === 'exited',
    denied: false,
  };
  const ended = result.state === 'completed' || facts.timedOut || facts.killed;
  return { ...facts, result: ended ? resultOf(facts) : 'ok', durationMs, outputBytes: result.outputBytes };
}
