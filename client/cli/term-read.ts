/** `execd term read TERMINAL [--screen]`: a terminal's output (or its screen), consuming nothing. */
import { TerminalRead } from '../../protocol/methods.js';
import { terminalStateLine } from '../terminal-render.js';
import { commandHelp, type CommandRunner } from './args.js';
import { usageError } from './errors.js';
import { inSession, SESSION_HELP } from './session.js';
import { parseTerminalCommand, terminalIdArgument } from './term-common.js';

/** Help text of `execd term read`. */
export const TERM_READ_HELP = commandHelp({
  usage: 'term read TERMINAL [--screen] [--offset N] [--session ID] [--json]',
  about: `Prints TERMINAL's output from byte offset N (default: the oldest byte it still holds), or with
--screen what its screen shows now (after cursor moves, colours removed: what a person would see in
less, top or vim). Consumes nothing. The terminal's state line goes to stderr.`,
  options: [
    SESSION_HELP,
    '  --screen           the current screen instead of the output stream',
    '  --offset N         stream offset to start at (the next offset is printed with --json)',
    '  --json             print { text, offset, nextOffset, droppedBytes, terminal } as JSON',
  ],
  examples: ['execd term read term-1 --screen'],
});

/** Runs `execd term read`. */
export const termReadCommand: CommandRunner = async (argv, globals) => {
  const { flags, positionals, sessionId, endpoint } = parseTerminalCommand('term read', argv, globals, {
    screen: { type: 'boolean', default: false },
    offset: { type: 'string' },
    json: { type: 'boolean', default: false },
  });
  const terminalId = terminalIdArgument('term read', positionals);
  const rawOffset = flags.offset as string | undefined;
  const offset = rawOffset === undefined ? 0 : Number(rawOffset);
  if (!Number.isInteger(offset) || offset < 0)
    throw usageError('term read', `--offset must be a non-negative integer, got ${JSON.stringify(rawOffset)}`);
  const read = await inSession(
    endpoint,
    sessionId,
    (client) => client.call(TerminalRead, { sessionId, terminalId, view: flags.screen ? 'screen' : 'stream', offset }),
    { command: 'term read' },
  );
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(read, null, 2)}\n`);
    return 0;
  }
  process.stdout.write(read.text.length > 0 && !read.text.endsWith('\n') ? `${read.text}\n` : read.text);
  if (read.droppedBytes > 0) process.stderr.write(`[${read.droppedBytes} earlier bytes are no longer held]\n`);
  if (!flags.screen && read.nextOffset < read.terminal.outputBytes)
    process.stderr.write(`[more output follows: execd term read ${terminalId} --offset ${read.nextOffset}]\n`);
  process.stderr.write(`${terminalStateLine(read.terminal)}\n`);
  return 0;
};
