#!/usr/bin/env node
/** `execd`: the command-line client and the daemon's entry point. */
import { splitGlobalFlags, type CommandRunner } from './args.js';
import { CONFIG_HELP, configCommand } from './config.js';
import { CliError, EXIT_EXECD_ERROR, EXIT_USAGE } from './errors.js';
import { JOBS_HELP, jobsCommand } from './jobs.js';
import { KILL_HELP, killCommand } from './kill.js';
import { PEEK_HELP, peekCommand } from './peek.js';
import { READ_HELP, readCommand } from './read.js';
import { RELEASE_HELP, releaseCommand } from './release.js';
import { RUN_HELP, runCommand } from './run.js';
import { SERVE_HELP, serveCommand } from './serve.js';
import { START_HELP, startCommand } from './start.js';
import { STATUS_HELP, statusCommand } from './status.js';
import { STOP_HELP, stopCommand } from './stop.js';
import { WAIT_HELP, waitCommand } from './wait.js';

type Command = { summary: string; help: string; run: CommandRunner };

/** Every subcommand, in the order `execd --help` lists them. */
const COMMANDS: Record<string, Command> = {
  serve: { summary: 'run the daemon (in the foreground, or --detach)', help: SERVE_HELP, run: serveCommand },
  run: { summary: 'run a command in the daemon, streaming its output', help: RUN_HELP, run: runCommand },
  start: { summary: 'start a background job and print its id', help: START_HELP, run: startCommand },
  jobs: { summary: 'list background jobs (--all: of every session)', help: JOBS_HELP, run: jobsCommand },
  read: { summary: "print a job's new output (--follow: until it ends)", help: READ_HELP, run: readCommand },
  peek: { summary: "print a job's output without consuming it", help: PEEK_HELP, run: peekCommand },
  wait: { summary: 'wait until a job ends; exit with its code', help: WAIT_HELP, run: waitCommand },
  kill: { summary: "kill a job's process tree", help: KILL_HELP, run: killCommand },
  release: { summary: 'kill if running, forget a job, delete its files', help: RELEASE_HELP, run: releaseCommand },
  status: { summary: "show the daemon's state", help: STATUS_HELP, run: statusCommand },
  config: { summary: 'get or set the configuration', help: CONFIG_HELP, run: configCommand },
  stop: { summary: 'shut the daemon down gracefully', help: STOP_HELP, run: stopCommand },
};

const HELP = `usage: execd [--socket PATH] [--state-dir DIR] <command> [options]

Commands:
${Object.entries(COMMANDS)
  .map(([name, command]) => `  ${name.padEnd(9)}${command.summary}`)
  .join('\n')}

Client commands start a daemon in the background when none is running (except status and stop).
The daemon is found through --socket/--state-dir, else $EXECD_SOCKET/$EXECD_STATE_DIR, else the
platform defaults; $EXECD_TOKEN overrides <state-dir>/token.

Exit codes: a command's own; 124 timeout; 128+n signal n; 125 execd error; 2 usage error.
Run 'execd <command> --help' for a command's options.
`;

/** True when `--help`/`-h` comes before any `--` (after it, it belongs to the command to run). */
function asksForHelp(argv: string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).some((arg) => arg === '--help' || arg === '-h');
}

/** Set for `serve`: a daemon that has shut down exits at once, whatever handles its libraries still hold. */
let exitAtOnce = false;

async function main(argv: string[]): Promise<number> {
  const { globals, rest } = splitGlobalFlags(argv);
  const [name, ...args] = rest;
  if (name === undefined) {
    process.stderr.write(HELP);
    return EXIT_USAGE;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(HELP);
    return 0;
  }
  if (!Object.hasOwn(COMMANDS, name)) {
    const what = name.startsWith('-') ? `unknown option '${name}'` : `unknown command '${name}'`;
    throw new CliError(`execd: ${what} (run 'execd --help')`, EXIT_USAGE);
  }
  const command = COMMANDS[name]!;
  exitAtOnce = name === 'serve';
  if (asksForHelp(args)) {
    process.stdout.write(command.help);
    return 0;
  }
  return command.run(args, globals);
}

main(process.argv.slice(2)).then(
  (code) => {
    if (exitAtOnce) process.exit(code);
    process.exitCode = code;
  },
  (error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    // A CliError already names its subcommand; everything else gets the program's name.
    process.stderr.write(`${error instanceof CliError ? message : `execd: ${message}`}\n`);
    process.exitCode = error instanceof CliError ? error.exitCode : EXIT_EXECD_ERROR;
  },
);
