#!/usr/bin/env node
/** `execd`: the command-line client and the daemon's entry point. */
import { ExecdConnectError, ExecdRpcError } from '../connection.js';
import { CliError, EXIT_EXECD_ERROR } from './errors.js';
import { RUN_HELP, runCommand } from './run.js';
import { SERVE_HELP, serveCommand } from './serve.js';

const HELP = `usage: execd <command> [options]

Commands:
  serve     run the daemon in the foreground
  run       run a command in the daemon and print its output

Run 'execd <command> --help' for a command's options.
`;

type Command = { help: string; run: (argv: string[]) => Promise<number> };

const COMMANDS: Record<string, Command> = {
  serve: { help: SERVE_HELP, run: serveCommand },
  run: { help: RUN_HELP, run: (argv) => runCommand(argv, {}) },
};

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(HELP);
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS[name];
  if (!command) throw new CliError(`execd: unknown command '${name}' (run 'execd --help')`, 2);
  if (rest.includes('--help') || rest.includes('-h')) {
    const dashDash = rest.indexOf('--');
    const helpAt = rest.findIndex((arg) => arg === '--help' || arg === '-h');
    if (dashDash === -1 || helpAt < dashDash) {
      process.stdout.write(command.help);
      return 0;
    }
  }
  return command.run(rest);
}

main(process.argv.slice(2)).then(
  (code) => {
    // A daemon that has shut down exits at once, whatever handles its libraries still hold.
    if (process.argv[2] === 'serve') process.exit(code);
    process.exitCode = code;
  },
  (error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    const known = error instanceof CliError || error instanceof ExecdRpcError || error instanceof ExecdConnectError;
    const parseError = (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    process.stderr.write(`${known || parseError ? message : `execd: ${message}`}\n`);
    process.exitCode = error instanceof CliError ? error.exitCode : parseError ? 2 : EXIT_EXECD_ERROR;
  },
);
