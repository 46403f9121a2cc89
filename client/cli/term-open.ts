/** `execd term open [--name N] [-- ARGV...]`: open a terminal in the session and print its id. */
import { TerminalOpen } from '../../protocol/methods.js';
import { commandHelp, type CommandRunner } from './args.js';
import { defaultWorkdir, SESSION_HELP, inSession } from './session.js';
import { parseTerminalCommand } from './term-common.js';

/** Help text of `execd term open`. */
export const TERM_OPEN_HELP = commandHelp({
  usage: 'term open [--name N] [--session ID] [--workdir DIR] [--json] [-- ARGV...]',
  about: `Opens a terminal (a PTY owned by the daemon) in the session and prints its id. It runs an
interactive bash (the daemon's prompt), or ARGV instead. It keeps running after this command
returns: until 'execd term close', its session closes, or the daemon stops.`,
  options: [
    SESSION_HELP,
    '  --name N           a label shown by `execd term list`',
    "  --workdir DIR      working directory (default: the current directory; over EXECD_URL the session's)",
    '  --json             print the terminal snapshot and its first output as JSON',
  ],
  examples: ['T=$(execd term open --name repl -- python3 -q); execd term send $T "1+1"'],
});

/** Runs `execd term open`. */
export const termOpenCommand: CommandRunner = async (argv, globals) => {
  const { flags, positionals, sessionId, endpoint } = parseTerminalCommand('term open', argv, globals, {
    name: { type: 'string' },
    workdir: { type: 'string' },
    json: { type: 'boolean', default: false },
  });
  const opened = await inSession(
    endpoint,
    sessionId,
    (client) =>
      client.call(TerminalOpen, {
        sessionId,
        name: flags.name as string | undefined,
        cwd: (flags.workdir as string | undefined) ?? defaultWorkdir(),
        argv: positionals.length > 0 ? positionals : undefined,
      }),
    { command: 'term open', create: true },
  );
  process.stdout.write(flags.json ? `${JSON.stringify(opened, null, 2)}\n` : `${opened.terminal.id}\n`);
  return 0;
};
