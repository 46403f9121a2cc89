/** Correctness checks inside the bench: a fast wrong answer is not a result. */
import type { BaselineResult } from './baselines.js';

/** Throws unless a baseline run exited 0 with exactly `stdout`. */
export function baselineCheck(result: BaselineResult, stdout: string): void {
  if (result.exitCode !== 0 || result.stdout !== stdout) {
    throw new Error(
      `baseline run: expected exit 0 and ${JSON.stringify(stdout)}, got ${result.exitCode} and ${JSON.stringify(result.stdout.slice(0, 200))}`,
    );
  }
}
