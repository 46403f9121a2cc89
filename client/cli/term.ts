/** `execd term <subcommand>`: the terminal subcommands, each in its own module, loaded on use. */
import type { CommandRunner } from './args.js';
import { usageError } from './errors.js';

type Subcommand = { summary: string; load: () => Promise<{ help: string; run: CommandRunner }> };

/** The subcommands of `execd term`, in the order its help lists them. */
const SUBCOMMANDS: Record<string, Subcommand> = {
  open: {
    summary: 'open a terminal (bash, or -- ARGV) and print its id',
    load: async () => import('./term-open.js').then((m) => ({ help: m.TERM_OPEN_HELP, run: m.termOpenCommand })),
  },
  list: {
    summary: "list the session's terminals (--all: every session's)",
    load: async () => import('./term-list.js').then((m) => ({ help: m.TERM_LIST_HELP, run: m.termListCommand })),
  },
  send: {
    summary: 'type TEXT (and Enter) and wait until the program is ready',
    load: async () => import('./term-send.js').then((m) => ({ help: m.TERM_SEND_HELP, run: m.termSendCommand })),
  },
  read: {
    summary: "print a terminal's output, or its screen (--screen)",
    load: async () => import('./term-read.js').then((m) => ({ help: m.TERM_READ_HELP, run: m.termReadCommand })),
  },
  write: {
    summary: 'write raw keystrokes (no Enter, no wait)',
    load: async () => import('./term-write.js').then((m) => ({ help: m.TERM_WRITE_HELP, run: m.termWriteCommand })),
  },
  signal: {
    summary: 'signal the foreground program (INT, QUIT, TSTP, TERM, KILL)',
    load: async () => import('./term-signal.js').then((m) => ({ help: m.TERM_SIGNAL_HELP, run: m.termSignalCommand })),
  },
  resize: {
    summary: "set a terminal's window size (COLS ROWS)",
    load: async () => import('./term-resize.js').then((m) => ({ help: m.TERM_RESIZE_HELP, run: m.termResizeCommand })),
  },
  close: {
    summary: 'close a terminal and kill everything on it',
    load: async () => import('./term-close.js').then((m) => ({ help: m.TERM_CLOSE_HELP, run: m.termCloseCommand })),
  },
};

/** Help text of `execd term`. */
export const TERM_HELP = `usage: execd term <subcommand> [options]

Terminals are PTYs owned by the daemon: they keep running between commands and after a client
goes, until closed, their session closes, or the daemon stops. They belong to a session (--session,
default cli) like jobs do.

Subcommands:
${Object.entries(SUBCOMMANDS)
  .map(([name, command]) => `  ${name.padEnd(7)}${command.summary}`)
  .join('\n')}

'execd attach TERMINAL' joins this terminal to one. Run 'execd term <subcommand> --help' for its options.
`;

/** Runs `execd term <subcommand>`. */
export const termCommand: CommandRunner = async (argv, globals) => {
  const [name, ...rest] = argv;
  if (name === undefined) throw usageError('term', `missing subcommand (${Object.keys(SUBCOMMANDS).join(', ')})`);
  if (!Object.hasOwn(SUBCOMMANDS, name)) throw usageError('term', `unknown subcommand '${name}'`);
  const subcommand = await SUBCOMMANDS[name]!.load();
  const end = rest.indexOf('--');
  if ((end === -1 ? rest : rest.slice(0, end)).some((arg) => arg === '--help' || arg === '-h')) {
    process.stdout.write(subcommand.help);
    return 0;
  }
  return subcommand.run(rest, globals);
};
