/** `execd term send TERMINAL TEXT`: type into a terminal and wait until its program is ready again. */
import { TerminalSend } from '../../protocol/methods.js';
import { plainTerminalText, readinessLine, readinessOf } from '../terminal-render.js';
import { commandHelp, parseMs, type CommandRunner } from './args.js';
import { usageError } from './errors.js';
import { EXIT_TIMEOUT } from './exit-codes.js';
import { inSession, SESSION_HELP } from './session.js';
import { parseTerminalCommand, terminalIdArgument } from './term-common.js';

/** The silence after which the CLI stops waiting ("not proven ready"). */
const IDLE_MS = 3_000;

/** Help text of `execd term send`. */
export const TERM_SEND_HELP = commandHelp({
  usage: 'term send TERMINAL TEXT [--no-submit] [--timeout MS] [--session ID] [--json]',
  about: `Types TEXT into TERMINAL, then Enter (unless --no-submit), and waits until its program is
ready for more: back at the prompt, reading from the terminal, silent for 3 s, or the timeout.
Prints what the terminal printed meanwhile on stdout as plain text (escape sequences removed;
--json keeps them) and the readiness line on stderr, e.g.
[ready: prompt]. Exits 0, or 124 when the wait timed out.`,
  options: [
    SESSION_HELP,
    '  --no-submit        type TEXT without pressing Enter',
    "  --timeout MS       how long to wait at most (default: the daemon's timeoutMs)",
    "  --json             print the daemon's answer as JSON",
  ],
  examples: ["execd term send term-1 'cd /tmp && ls'"],
});

/** Runs `execd term send`. */
export const termSendCommand: CommandRunner = async (argv, globals) => {
  const { flags, positionals, sessionId, endpoint } = parseTerminalCommand('term send', argv, globals, {
    'no-submit': { type: 'boolean', default: false },
    timeout: { type: 'string' },
    json: { type: 'boolean', default: false },
  });
  const terminalId = terminalIdArgument('term send', positionals, 2);
  if (positionals.length < 2) throw usageError('term send', 'missing TEXT (use "" to press just Enter)');
  const timeoutMs = parseMs('term send', '--timeout', flags.timeout as string | undefined);
  const result = await inSession(
    endpoint,
    sessionId,
    (client) =>
      client.call(TerminalSend, {
        sessionId,
        terminalId,
        text: positionals[1]!,
        submit: !flags['no-submit'],
        idleMs: IDLE_MS,
        timeoutMs,
      }),
    { command: 'term send' },
  );
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } else {
    // Clean text, as the library's tools show it: no prompt's bracketed-paste toggles or colours.
    const output = plainTerminalText(result.output);
    process.stdout.write(output);
    const line = readinessLine(readinessOf(result, IDLE_MS, result.timeoutMs));
    process.stderr.write(`${output.length > 0 && !output.endsWith('\n') ? '\n' : ''}${line}\n`);
  }
  return result.waitReason === 'timeout' ? EXIT_TIMEOUT : 0;
};
