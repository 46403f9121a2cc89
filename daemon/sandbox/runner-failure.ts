/**
 * Telling a runner that failed before the command ran from a command that failed. bwrap reports
 * its own failures (a missing mount source, a working directory it cannot enter, namespaces the
 * kernel refuses, a shell it cannot exec) as `bwrap: <reason>` lines on stderr and exits 1, before
 * the command has written anything; the Landlock launcher does the same with `landlock: ` lines.
 * A run is a runner failure only when all of that holds: exit status 1, no stdout at all, and a
 * stderr made only of such lines. A failure that lost a race with the mount table is worth a new
 * start, and what may be one is held out of the stream and the log until that is known.
 */

/** The facts of a finished run that the decision reads. */
export interface RunOutcome {
  exitCode: number | null;
  stdoutBytes: number;
  /** The whole stderr text (a runner's message is short; a truncated stderr is never one). */
  stderr: string;
  stderrTruncated: boolean;
}

/** What starts a runner's own line; `RUNNER_MESSAGE` is a stderr made only of such lines. */
const RUNNER_PREFIXES = ['bwrap: ', 'landlock: '];
const RUNNER_MESSAGE = /^(?:(?:bwrap|landlock): [^\n]*\n?)+$/;

/** The runner's own message when the runner failed before the command ran, else undefined. */
export function runnerFailure(outcome: RunOutcome): string | undefined {
  if (outcome.exitCode !== 1 || outcome.stdoutBytes > 0 || outcome.stderrTruncated) return undefined;
  if (!RUNNER_MESSAGE.test(outcome.stderr)) return undefined;
  return outcome.stderr.trim().split('\n').join('; ');
}

/**
 * bwrap's failures that come from the mount table changing under it (containers/bubblewrap#650):
 * it copies the table, then remounts each mount below `/` read-only, and a mount another process
 * removed in between (a container stopping, an automount expiring) fails that remount. Nothing ran
 * and nothing is wrong with the plan, so the start is worth another try.
 */
const MOUNT_TABLE_RACE =
  /Unable to apply mount flags: remount "[^"]*": (?:No such file or directory|Invalid argument)|Unable to find "[^"]*" in mount table/;

/**
 * How many times a run or job is started while its runner loses races with the mount table: the
 * command never ran, so starting it again changes nothing but the outcome.
 */
export const RUNNER_STARTS = 3;

/** True when a runner failure (as `runnerFailure` words it) lost a race with the mount table. */
export function lostMountRace(reason: string): boolean {
  return MOUNT_TABLE_RACE.test(reason);
}

/** How much stderr a hold keeps before it gives up: a runner's own message is one short line. */
const MAX_HELD_CHARS = 4096;

/** True while `text` may still turn out to be only runner lines (its last line may be partial). */
function mayBeRunnerMessage(text: string): boolean {
  const lines = text.split('\n');
  const last = lines.pop()!;
  return (
    lines.every((line) => RUNNER_PREFIXES.some((prefix) => line.startsWith(prefix))) &&
    RUNNER_PREFIXES.some((prefix) => last.startsWith(prefix) || prefix.startsWith(last))
  );
}

/**
 * Holds back a confined run's streamed stderr while all of it may still be the runner's own
 * failure, so a start that is tried again (`lostMountRace`) streams nothing of the failed one. The
 * hold ends at the first stdout, at stderr that cannot be a runner message, or when the run ends.
 */
export class RunnerMessageHold {
  private seen = '';
  private held: Array<() => void> | undefined = [];
  private dropped = false;

  /** Reads a stderr chunk before it is passed on; the hold ends once it cannot be a runner's message. */
  see(chunk: Buffer): void {
    if (!this.held) return;
    this.seen += chunk.toString('latin1');
    if (this.seen.length > MAX_HELD_CHARS || !mayBeRunnerMessage(this.seen)) this.release();
  }

  /** What the hold keeps (as latin1 text), or undefined once it ended. */
  heldText(): string | undefined {
    return this.held ? this.seen : undefined;
  }

  /** Calls `send` now, or in order once the hold ends; never after `drop`. */
  pass(send: () => void): void {
    if (this.dropped) return;
    if (this.held) this.held.push(send);
    else send();
  }

  /** Ends the hold: what it kept is sent, in order. */
  release(): void {
    const held = this.held;
    this.held = undefined;
    for (const send of held ?? []) send();
  }

  /** Ends the hold and forgets what it kept: this start's output is not the run's. */
  drop(): void {
    this.held = undefined;
    this.dropped = true;
  }
}

/** Calls `send` through `hold` when there is one, else at once. */
export function sendThrough(hold: RunnerMessageHold | undefined, send: () => void): void {
  if (hold) hold.pass(send);
  else send();
}
