/** CLI failures: one clear line on stderr and exit code 125, never a stack trace. */

/** Exit code of the CLI for an execd error (SPEC §4). */
export const EXIT_EXECD_ERROR = 125;

/** A failure the CLI reports as one line. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = EXIT_EXECD_ERROR,
  ) {
    super(message);
  }
}
