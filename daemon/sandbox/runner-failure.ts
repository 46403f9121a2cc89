/**
 * Telling a runner that failed before the command ran from a command that failed. bwrap reports
 * its own failures (a missing mount source, a working directory it cannot enter, namespaces the
 * kernel refuses, a shell it cannot exec) as `bwrap: <reason>` lines on stderr and exits 1, before
 * the command has written anything; the Landlock launcher does the same with `landlock: ` lines.
 * A run is a runner failure only when all of that holds: exit status 1, no stdout at all, and a
 * stderr made only of such lines.
 */

/** The facts of a finished run that the decision reads. */
export interface RunOutcome {
  exitCode: number | null;
  stdoutBytes: number;
  /** The whole stderr text (a runner's message is short; a truncated stderr is never one). */
  stderr: string;
  stderrTruncated: boolean;
}

const RUNNER_MESSAGE = /^(?:(?:bwrap|landlock): [^\n]*\n?)+$/;

/** The runner's own message when the runner failed before the command ran, else undefined. */
export function runnerFailure(outcome: RunOutcome): string | undefined {
  if (outcome.exitCode !== 1 || outcome.stdoutBytes > 0 || outcome.stderrTruncated) return undefined;
  if (!RUNNER_MESSAGE.test(outcome.stderr)) return undefined;
  return outcome.stderr.trim().split('\n').join('; ');
}
