/** `execd term list [--all]`: the terminals of the session, or of every session. */
import { TerminalList } from '../../protocol/methods.js';
import type { TerminalSnapshot } from '../../protocol/terminal.js';
import { commandHelp, type CommandRunner } from './args.js';
import { ADMIN_OPTIONS, withClient } from './autostart.js';
import { attachSession, SESSION_HELP } from './session.js';
import { formatTable } from '../table.js';
import { parseTerminalCommand } from './term-common.js';

/** Help text of `execd term list`. */
export const TERM_LIST_HELP = commandHelp({
  usage: 'term list [--all] [--session ID] [--json]',
  about: 'Lists the terminals of the session (id, status, session, pid, what runs in the foreground, cwd, name).',
  options: [
    SESSION_HELP,
    "  --all              every session's terminals",
    '  --json             print the snapshots as JSON',
  ],
  examples: ['execd term list --all'],
});

/** The status cell: `running`, `exited 0`, `killed SIGTERM`. */
function statusCell(terminal: TerminalSnapshot): string {
  if (terminal.status === 'running') return terminal.busy ? 'running (busy)' : 'running';
  if (terminal.signal) return `killed ${terminal.signal}`;
  return terminal.exitCode === null ? 'exited' : `exited ${terminal.exitCode}`;
}

/** The `execd term list` table. */
export function terminalsTable(terminals: TerminalSnapshot[]): string {
  return formatTable(
    ['ID', 'STATUS', 'SESSION', 'PID', 'PROGRAM', 'CWD', 'NAME'],
    terminals.map((terminal) => [
      terminal.id,
      statusCell(terminal),
      terminal.ownerSession,
      String(terminal.pid),
      terminal.status === 'running' && terminal.foreground ? terminal.foreground.command : terminal.argv.join(' '),
      terminal.cwd,
      terminal.name ?? '',
    ]),
  );
}

/** Runs `execd term list`. */
export const termListCommand: CommandRunner = async (argv, globals) => {
  const { flags, positionals, sessionId, endpoint } = parseTerminalCommand('term list', argv, globals, {
    all: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  });
  if (positionals.length > 0)
    throw (await import('./errors.js')).usageError(
      'term list',
      `unexpected argument ${JSON.stringify(positionals[0])}`,
    );
  const terminals = await withClient(
    endpoint,
    async (client) => {
      if (flags.all) return client.call(TerminalList, { all: true });
      if (!(await attachSession(client, sessionId))) return [];
      return client.call(TerminalList, { sessionId });
    },
    flags.all ? ADMIN_OPTIONS : undefined,
  );
  if (flags.json) process.stdout.write(`${JSON.stringify(terminals, null, 2)}\n`);
  else if (terminals.length === 0)
    process.stdout.write(flags.all ? 'no terminals\n' : `no terminals in session ${sessionId}\n`);
  else process.stdout.write(terminalsTable(terminals));
  return 0;
};
