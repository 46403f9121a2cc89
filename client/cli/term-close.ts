/** `execd term close TERMINAL`: close a terminal; returns once every process on it is gone. */
import { TerminalClose } from '../../protocol/methods.js';
import { commandHelp, type CommandRunner } from './args.js';
import { inSession, SESSION_HELP } from './session.js';
import { parseTerminalCommand, terminalIdArgument } from './term-common.js';

/** Help text of `execd term close`. */
export const TERM_CLOSE_HELP = commandHelp({
  usage: 'term close TERMINAL [--session ID]',
  about: `Closes TERMINAL: its program and everything still on it are killed (SIGTERM, then SIGKILL after
graceMs), and the command returns once they are gone. Closing it again does nothing.`,
  options: [SESSION_HELP],
  examples: ['execd term close term-1'],
});

/** Runs `execd term close`. */
export const termCloseCommand: CommandRunner = async (argv, globals) => {
  const { positionals, sessionId, endpoint } = parseTerminalCommand('term close', argv, globals, {});
  const terminalId = terminalIdArgument('term close', positionals);
  const { closed } = await inSession(
    endpoint,
    sessionId,
    (client) => client.call(TerminalClose, { sessionId, terminalId }),
    { command: 'term close' },
  );
  process.stdout.write(closed ? `closed ${terminalId}\n` : `${terminalId} had already exited\n`);
  return 0;
};
