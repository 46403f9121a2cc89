/** CLI failures: one clear line on stderr and an exit code, never a stack trace. */

/** Exit code of the CLI for an execd error (docs/cli.md). */
export const EXIT_EXECD_ERROR = 125;

/** Exit code of the CLI for a usage error (unknown subcommand, unknown flag, missing argument). */
export const EXIT_USAGE = 2;

/** A failure the CLI reports as one line. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = EXIT_EXECD_ERROR,
  ) {
    super(message);
  }
}

/** A usage error of one subcommand, pointing at its help. */
export function usageError(command: string, problem: string): CliError {
  const name = command ? `execd ${command}` : 'execd';
  return new CliError(`${name}: ${problem} (see '${name} --help')`, EXIT_USAGE);
}
