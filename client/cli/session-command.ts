/**
 * `execd session list` and `execd session close ID`: the daemon's sessions, and ending one (its
 * jobs and terminals killed, its files deleted). Neither starts a daemon: with none running there
 * is no session to list or close.
 */
import { DaemonStatus, SessionClose } from '../../protocol/methods.js';
import type { SessionCloseResult } from '../../protocol/types.js';
import { formatTable } from '../table.js';
import { commandHelp, endpointOf, ENDPOINT_OPTIONS, parseCommand, type CommandRunner } from './args.js';
import { ADMIN_OPTIONS, connectIfRunning } from './autostart.js';
import { CliError, usageError } from './errors.js';
import { attachSession, noSession } from './session.js';

/** Help text of `execd session`. */
export const SESSION_COMMAND_HELP = commandHelp({
  usage: 'session list [--json]\n       execd session close ID',
  about: `Lists the daemon's sessions (id, connections, running jobs, running terminals, cwd), or
closes session ID: its jobs and terminals are killed, its log and spill files deleted, and its
request keys forgotten; a harness holding it open gets SESSION_NOT_FOUND on its next call. Starts
no daemon: with none running there are no sessions ('list' prints 'no sessions').`,
  options: ['  --json             (list) print the sessions as JSON'],
  examples: ['execd session list', 'execd session close agent-A'],
});

/** `killed 1 job, closed 2 terminals, removed 3 files`. */
function closedSummary(result: SessionCloseResult): string {
  const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;
  return `killed ${count(result.killedJobs, 'job')}, closed ${count(result.closedTerminals, 'terminal')}, removed ${count(result.removedFiles, 'file')}`;
}

/** Runs `execd session`. */
export const sessionCommand: CommandRunner = async (argv, globals) => {
  const { values, positionals } = parseCommand('session', {
    args: argv,
    options: { ...ENDPOINT_OPTIONS, json: { type: 'boolean', default: false } },
    allowPositionals: true,
    strict: true,
  });
  const [action, ...rest] = positionals;
  if (action !== 'list' && action !== 'close') {
    throw usageError(
      'session',
      action === undefined
        ? "missing 'list' or 'close'"
        : `unknown action ${JSON.stringify(action)}; expected 'list' or 'close'`,
    );
  }
  if (action === 'list' && rest.length > 0) throw usageError('session', `'session list' takes no arguments`);
  if (action === 'close' && rest.length !== 1) {
    throw usageError('session', rest.length === 0 ? "'session close' needs a session ID" : 'expected one session ID');
  }
  const endpoint = endpointOf(values, globals);
  // Listing every session is the administrative daemon/status; closing one needs only to attach to it.
  const client = await connectIfRunning(endpoint, action === 'list' ? ADMIN_OPTIONS : undefined);
  if (action === 'list') {
    // Without the admin right daemon/status lists only this connection's sessions (none): no list.
    if (client && client.info.admin !== true) {
      client.close();
      throw new CliError(
        "execd session list: listing every session needs the daemon's admin token (for a daemon elsewhere: EXECD_ADMIN_TOKEN)",
      );
    }
    const sessions = client ? (await client.call(DaemonStatus, {}).finally(() => client.close())).sessions : [];
    if (values.json) process.stdout.write(`${JSON.stringify(sessions, null, 2)}\n`);
    else if (sessions.length === 0) process.stdout.write('no sessions\n');
    else {
      const rows = sessions.map((s) => [
        s.sessionId,
        String(s.connections),
        String(s.runningJobs),
        String(s.runningTerminals),
        s.cwd,
      ]);
      process.stdout.write(formatTable(['SESSION', 'CONNECTIONS', 'RUNNING JOBS', 'TERMINALS', 'CWD'], rows));
    }
    return 0;
  }
  const sessionId = rest[0]!;
  if (!client) throw noSession('session close', sessionId);
  try {
    if (!(await attachSession(client, sessionId))) throw noSession('session close', sessionId);
    const result = await client.call(SessionClose, { sessionId });
    process.stdout.write(`closed session ${sessionId}: ${closedSummary(result)}\n`);
    return 0;
  } finally {
    client.close();
  }
};
