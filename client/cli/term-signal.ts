/** `execd term signal TERMINAL SIGNAL`: signal what runs in a terminal's foreground (Ctrl-C without a keyboard). */
import { TerminalSignal } from '../../protocol/methods.js';
import { TERMINAL_SIGNALS, type TerminalSignalName } from '../../protocol/terminal.js';
import { commandHelp, type CommandRunner } from './args.js';
import { usageError } from './errors.js';
import { inSession, SESSION_HELP } from './session.js';
import { parseTerminalCommand, terminalIdArgument } from './term-common.js';

/** Help text of `execd term signal`. */
export const TERM_SIGNAL_HELP = commandHelp({
  usage: 'term signal TERMINAL SIGNAL [--session ID]',
  about: `Sends SIGNAL (${TERMINAL_SIGNALS.join(', ')}; the SIG may be left out) to the
foreground process group of TERMINAL — the command running at the shell's prompt, as Ctrl-C would.
Prints the group signalled, or that the terminal has exited.`,
  options: [SESSION_HELP],
  examples: ['execd term signal term-1 INT'],
});

/** Runs `execd term signal`. */
export const termSignalCommand: CommandRunner = async (argv, globals) => {
  const { positionals, sessionId, endpoint } = parseTerminalCommand('term signal', argv, globals, {});
  const terminalId = terminalIdArgument('term signal', positionals, 2);
  const raw = positionals[1];
  if (raw === undefined) throw usageError('term signal', `missing SIGNAL (one of ${TERMINAL_SIGNALS.join(', ')})`);
  const name = raw.toUpperCase().startsWith('SIG') ? raw.toUpperCase() : `SIG${raw.toUpperCase()}`;
  if (!(TERMINAL_SIGNALS as readonly string[]).includes(name))
    throw usageError('term signal', `SIGNAL must be one of ${TERMINAL_SIGNALS.join(', ')}, got ${JSON.stringify(raw)}`);
  const signal = name as TerminalSignalName;
  const result = await inSession(
    endpoint,
    sessionId,
    (client) => client.call(TerminalSignal, { sessionId, terminalId, signal }),
    { command: 'term signal' },
  );
  process.stdout.write(
    result.delivered
      ? `sent ${signal} to process group ${result.pgid} of ${terminalId}\n`
      : `${terminalId} has exited\n`,
  );
  return 0;
};
