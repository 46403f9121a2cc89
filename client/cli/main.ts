#!/usr/bin/env node
/** `execd`: the command-line client and the daemon's entry point. */
import { splitGlobalFlags, type CommandRunner } from './args.js';
import { packageVersion } from '../../shared/package-version.js';
import { handleClosedOutput } from './closed-output.js';
import { CliError, EXIT_EXECD_ERROR, EXIT_USAGE } from './errors.js';

/** What a subcommand's module provides. */
type CommandModule = { help: string; run: CommandRunner };

/**
 * A subcommand: its line in `execd --help` and how to load it. Only the chosen subcommand's
 * module is loaded — startup time is most of a short `execd run`, and `serve` alone pulls in the
 * whole daemon.
 */
type Command = { summary: string; load: () => Promise<CommandModule> };

/** Every subcommand, in the order `execd --help` lists them. */
const COMMANDS: Record<string, Command> = {
  serve: {
    summary: 'run the daemon (in the foreground, or --detach)',
    load: async () => import('./serve.js').then((m) => ({ help: m.SERVE_HELP, run: m.serveCommand })),
  },
  run: {
    summary: 'run a command in the daemon, streaming its output',
    load: async () => import('./run.js').then((m) => ({ help: m.RUN_HELP, run: m.runCommand })),
  },
  start: {
    summary: 'start a background job and print its id',
    load: async () => import('./start.js').then((m) => ({ help: m.START_HELP, run: m.startCommand })),
  },
  jobs: {
    summary: 'list background jobs (--all: of every session)',
    load: async () => import('./jobs.js').then((m) => ({ help: m.JOBS_HELP, run: m.jobsCommand })),
  },
  read: {
    summary: "print a job's new output (--follow: until it ends)",
    load: async () => import('./read.js').then((m) => ({ help: m.READ_HELP, run: m.readCommand })),
  },
  peek: {
    summary: "print a job's output without consuming it",
    load: async () => import('./peek.js').then((m) => ({ help: m.PEEK_HELP, run: m.peekCommand })),
  },
  wait: {
    summary: 'wait until a job ends; exit with its code',
    load: async () => import('./wait.js').then((m) => ({ help: m.WAIT_HELP, run: m.waitCommand })),
  },
  write: {
    summary: "write to a job's stdin (execd start --keep-stdin)",
    load: async () => import('./write.js').then((m) => ({ help: m.WRITE_HELP, run: m.writeCommand })),
  },
  kill: {
    summary: "kill a job's process tree",
    load: async () => import('./kill.js').then((m) => ({ help: m.KILL_HELP, run: m.killCommand })),
  },
  release: {
    summary: 'kill if running, forget a job, delete its files',
    load: async () => import('./release.js').then((m) => ({ help: m.RELEASE_HELP, run: m.releaseCommand })),
  },
  clean: {
    summary: 'release every ended job (--all: of every session)',
    load: async () => import('./clean.js').then((m) => ({ help: m.CLEAN_HELP, run: m.cleanCommand })),
  },
  term: {
    summary: 'open, list, send to, signal, read and close terminals (execd term --help)',
    load: async () => import('./term.js').then((m) => ({ help: m.TERM_HELP, run: m.termCommand })),
  },
  attach: {
    summary: 'join this terminal to a daemon terminal (Ctrl-] detaches)',
    load: async () => import('./attach.js').then((m) => ({ help: m.ATTACH_HELP, run: m.attachCommand })),
  },
  cp: {
    summary: "copy files and directories to or from the daemon's side (:PATH, SESSION:PATH)",
    load: async () => import('./files.js').then((m) => ({ help: m.CP_HELP, run: m.cpCommand })),
  },
  ls: {
    summary: "list a directory on the daemon's side",
    load: async () => import('./files.js').then((m) => ({ help: m.LS_HELP, run: m.lsCommand })),
  },
  cat: {
    summary: "print a file on the daemon's side",
    load: async () => import('./files.js').then((m) => ({ help: m.CAT_HELP, run: m.catCommand })),
  },
  session: {
    summary: "list the daemon's sessions, or close one (kills its jobs and terminals)",
    load: async () =>
      import('./session-command.js').then((m) => ({ help: m.SESSION_COMMAND_HELP, run: m.sessionCommand })),
  },
  status: {
    summary: "show the daemon's state",
    load: async () => import('./status.js').then((m) => ({ help: m.STATUS_HELP, run: m.statusCommand })),
  },
  config: {
    summary: 'get or set the configuration',
    load: async () => import('./config.js').then((m) => ({ help: m.CONFIG_HELP, run: m.configCommand })),
  },
  mcp: {
    summary: 'serve the tools to an MCP client over stdio',
    load: async () => import('./mcp.js').then((m) => ({ help: m.MCP_HELP, run: m.mcpCommand })),
  },
  schema: {
    summary: "print the protocol's JSON Schema (no daemon needed)",
    load: async () => import('./schema.js').then((m) => ({ help: m.SCHEMA_HELP, run: m.schemaCommand })),
  },
  stop: {
    summary: 'shut the daemon down gracefully',
    load: async () => import('./stop.js').then((m) => ({ help: m.STOP_HELP, run: m.stopCommand })),
  },
  upgrade: {
    summary: 'upgrade the daemon in place (same pid), keeping its listeners and jobs',
    load: async () => import('./upgrade.js').then((m) => ({ help: m.UPGRADE_HELP, run: m.upgradeCommand })),
  },
};

const HELP = `usage: execd [--socket PATH] [--state-dir DIR] <command> [options]
       execd --version

Commands:
${Object.entries(COMMANDS)
  .map(([name, command]) => `  ${name.padEnd(9)}${command.summary}`)
  .join('\n')}

Client commands start a daemon in the background when none is running (except status, stop and
session, and jobs when there is nothing to list).
The daemon is found through --socket/--state-dir, else $EXECD_SOCKET/$EXECD_STATE_DIR, else the
platform defaults; $EXECD_TOKEN overrides <state-dir>/token. $EXECD_URL (tls://HOST:PORT) reaches
a daemon elsewhere, with $EXECD_TOKEN (or $EXECD_TOKEN_FILE, --token-file FILE), $EXECD_CA,
$EXECD_CERT/$EXECD_KEY, $EXECD_SERVERNAME (--servername NAME: the name its certificate carries,
default the URL's host) and $EXECD_KEEPALIVE_MS.

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

/** The subcommand being run (`kill`, `term send`), so that a failure's line names it. */
let running = '';

async function main(argv: string[]): Promise<number> {
  const { globals, rest } = splitGlobalFlags(argv);
  // The remote flags are read where `EXECD_URL` is (remote.ts): the flag wins over the variable.
  if (globals.servername !== undefined) process.env.EXECD_SERVERNAME = globals.servername;
  if (globals.tokenFile !== undefined) process.env.EXECD_TOKEN_FILE = globals.tokenFile;
  const [name, ...args] = rest;
  // A closed output ends a client quietly (exit 141); the daemon keeps its own shutdown path.
  if (name !== 'serve') handleClosedOutput(EXIT_EXECD_ERROR);
  if (name === undefined) {
    process.stderr.write(HELP);
    return EXIT_USAGE;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(HELP);
    return 0;
  }
  if (name === '--version' || name === '-V' || name === 'version') {
    process.stdout.write(`execd ${packageVersion()}\n`);
    return 0;
  }
  if (!Object.hasOwn(COMMANDS, name)) {
    const what = name.startsWith('-') ? `unknown option '${name}'` : `unknown command '${name}'`;
    throw new CliError(`execd: ${what} (run 'execd --help')`, EXIT_USAGE);
  }
  exitAtOnce = name === 'serve';
  running = name === 'term' && args[0] !== undefined && !args[0].startsWith('-') ? `term ${args[0]}` : name;
  const command = await COMMANDS[name]!.load();
  // A command group (`term`) answers `--help` of its subcommands itself.
  if (asksForHelp(args) && !(name === 'term' && args[0] !== undefined && !args[0].startsWith('-'))) {
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
    // A CliError already names its subcommand; everything else gets the subcommand's name.
    const prefix = running ? `execd ${running}` : 'execd';
    process.stderr.write(`${error instanceof CliError ? message : `${prefix}: ${message}`}\n`);
    process.exitCode = error instanceof CliError ? error.exitCode : EXIT_EXECD_ERROR;
    // A daemon that failed to start may have begun subsystems (timers, worker threads) it never
    // listened for: the process ends with its one line, not when they let go.
    if (exitAtOnce) process.exit();
  },
);
