/**
 * A reader that went away (`execd run -- yes | head -2`): writing to a closed pipe fails with
 * EPIPE (Node ignores SIGPIPE), which would surface as an uncaught stream error with a stack trace.
 * The CLI ends quietly instead, as a shell command killed by SIGPIPE would: it runs the cleanups
 * registered for that case (e.g. `run` kills the remote command), then exits 141.
 */

/** Exit code when the output's reader went away: 128 + SIGPIPE (13), what a shell reports. */
export const EXIT_OUTPUT_CLOSED = 141;

/** How long the cleanups may take before the CLI exits anyway. */
const CLEANUP_LIMIT_MS = 5_000;

type Cleanup = () => unknown;

const cleanups = new Set<Cleanup>();
let ending = false;

/** Registers work to do before the CLI exits because its output was closed; returns the unregistering. */
export function onOutputClosed(cleanup: Cleanup): () => void {
  cleanups.add(cleanup);
  return () => cleanups.delete(cleanup);
}

/** True once the output was found closed: print nothing more, the CLI is ending. */
export function outputClosed(): boolean {
  return ending;
}

/** Runs every cleanup (at most `CLEANUP_LIMIT_MS`) and exits with `code`; later calls do nothing. */
function endAfterCleanups(code: number): void {
  if (ending) return;
  ending = true;
  const pending = [...cleanups].map((cleanup) => Promise.resolve().then(cleanup));
  const limit = new Promise((resolve) => setTimeout(resolve, CLEANUP_LIMIT_MS).unref());
  // Neither allSettled nor the limit rejects; were one to, the CLI would still exit.
  const exit = () => process.exit(code);
  Promise.race([Promise.allSettled(pending), limit]).then(exit, exit);
}

/**
 * Handles errors of stdout and stderr for the whole process: EPIPE ends the CLI quietly with 141;
 * any other write error ends it with `otherCode` after one line on stderr (when stderr still works).
 */
export function handleClosedOutput(otherCode: number): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (ending) return;
      if (error.code !== 'EPIPE' && stream === process.stdout) {
        process.stderr.write(`execd: cannot write the output: ${error.message}\n`);
        endAfterCleanups(otherCode);
        return;
      }
      endAfterCleanups(error.code === 'EPIPE' ? EXIT_OUTPUT_CLOSED : otherCode);
    });
  }
}
