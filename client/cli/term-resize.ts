/** `execd term resize TERMINAL COLS ROWS`: change a terminal's window size (its program gets SIGWINCH). */
import { TerminalResize } from '../../protocol/methods.js';
import { commandHelp, type CommandRunner } from './args.js';
import { usageError } from './errors.js';
import { inSession, SESSION_HELP } from './session.js';
import { parseTerminalCommand, terminalIdArgument } from './term-common.js';

/** Help text of `execd term resize`. */
export const TERM_RESIZE_HELP = commandHelp({
  usage: 'term resize TERMINAL COLS ROWS [--session ID]',
  about: `Sets TERMINAL's window to COLS columns and ROWS rows (1 to 1000 each); the program is told
with SIGWINCH, and 'execd term read --screen' shows the new size. Prints the size now.`,
  options: [SESSION_HELP],
  examples: ['execd term resize term-1 120 40'],
});

/** Runs `execd term resize`. */
export const termResizeCommand: CommandRunner = async (argv, globals) => {
  const { positionals, sessionId, endpoint } = parseTerminalCommand('term resize', argv, globals, {});
  const terminalId = terminalIdArgument('term resize', positionals, 3);
  if (positionals.length < 3) throw usageError('term resize', 'missing COLS and ROWS (e.g. 120 40)');
  // Numbers go to the daemon as given: its schema says what a bad one is (cols: must be an integer from 1 to 1000).
  const [cols, rows] = positionals.slice(1).map(Number) as [number, number];
  const terminal = await inSession(
    endpoint,
    sessionId,
    (client) => client.call(TerminalResize, { sessionId, terminalId, cols, rows }),
    { command: 'term resize' },
  );
  process.stdout.write(`${terminalId} is ${terminal.cols}x${terminal.rows}\n`);
  return 0;
};
