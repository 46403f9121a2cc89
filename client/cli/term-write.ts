/** `execd term write TERMINAL TEXT`: raw input to a terminal, returning at once (no Enter, no wait). */
import { TerminalWrite } from '../../protocol/methods.js';
import { commandHelp, type CommandRunner } from './args.js';
import { usageError } from './errors.js';
import { inSession, SESSION_HELP } from './session.js';
import { parseTerminalCommand, terminalIdArgument } from './term-common.js';

/** Help text of `execd term write`. */
export const TERM_WRITE_HELP = commandHelp({
  usage: 'term write TERMINAL TEXT [--session ID]',
  about: `Writes TEXT to TERMINAL as keystrokes, exactly — no Enter added, no waiting for the program
(use 'execd term send' to type a line and wait). Control keys go in as their bytes, e.g.
$'\\x03' for Ctrl-C or $'\\e[A' for the up arrow. Works while a send or run is in progress.`,
  options: [SESSION_HELP],
  examples: ["execd term write term-1 $'q'", "execd term write term-1 $'\\x04'"],
});

/** Runs `execd term write`. */
export const termWriteCommand: CommandRunner = async (argv, globals) => {
  const { positionals, sessionId, endpoint } = parseTerminalCommand('term write', argv, globals, {});
  const terminalId = terminalIdArgument('term write', positionals, 2);
  const data = positionals[1];
  if (data === undefined) throw usageError('term write', 'missing TEXT');
  const { written } = await inSession(
    endpoint,
    sessionId,
    (client) => client.call(TerminalWrite, { sessionId, terminalId, data }),
    { command: 'term write' },
  );
  process.stdout.write(`wrote ${written} byte${written === 1 ? '' : 's'} to ${terminalId}\n`);
  return 0;
};
