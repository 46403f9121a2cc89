/**
 * `execd stop`: a graceful shutdown of the daemon; returns once its socket is gone and, for a local
 * daemon, once it has let go of its state dir, so a `serve` right after it finds the dir free.
 */
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { liveHolder } from '../../shared/lock-file.js';
import { stateLockPath } from '../../shared/ownership.js';
import { socketIsLive } from '../../shared/socket-probe.js';
import { DaemonShutdown } from '../../protocol/methods.js';
import { PLATFORM } from '../../protocol/platform.js';
import { commandHelp, endpointOf, ENDPOINT_OPTIONS, parseCommand, type CommandRunner } from './args.js';
import { ADMIN_OPTIONS, connectIfRunning } from './autostart.js';
import { CliError } from './errors.js';

/** Help text of `execd stop`. */
export const STOP_HELP = commandHelp({
  usage: 'stop [--keep-jobs]',
  about: `Shuts the daemon down gracefully: in-flight runs are answered (aborted), every job and
process tree is killed, the journal is written and the socket removed. Returns once the socket is
gone and the daemon has let go of its state dir. With no daemon running, says so and exits 0.

With --keep-jobs, running jobs are left running (their output goes on into their log files) and
the next daemon started on the same state dir adopts them: listed running, readable, killable.
Terminals are closed all the same (a terminal does not survive its daemon), and a job whose
stderr the daemon reads through a pipe (a sandboxed job) is killed as without --keep-jobs.`,
  options: ['  --keep-jobs        leave running jobs running for the next daemon on this state dir'],
  examples: ['execd stop', 'execd stop --keep-jobs && execd status'],
});

/** How long a graceful shutdown may take (kills wait up to graceMs per tree, in parallel). */
const STOP_TIMEOUT_MS = 60_000;

/** Runs `execd stop`. */
export const stopCommand: CommandRunner = async (argv, globals) => {
  const { values } = parseCommand('stop', {
    args: argv,
    options: { ...ENDPOINT_OPTIONS, 'keep-jobs': { type: 'boolean', default: false } },
    strict: true,
  });
  const endpoint = endpointOf(values, globals);
  const client = await connectIfRunning(endpoint, ADMIN_OPTIONS);
  if (!client) {
    process.stderr.write(`execd stop: not running (no daemon listening on ${endpoint.socketPath})\n`);
    return 0;
  }
  const pid = client.info.daemon.pid;
  try {
    await client.call(DaemonShutdown, values['keep-jobs'] ? { keepJobs: true } : {});
  } finally {
    client.close();
  }
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  // The socket goes first; the daemon still ends its connections (a client that does not close its
  // end gets a second or two) before it gives up the state dir's lock, which a next daemon needs.
  const ownsStateDir = () => !process.env.EXECD_URL && liveHolder(stateLockPath(endpoint.stateDir))?.pid === pid;
  const gone = async () =>
    !(await socketIsLive(endpoint.socketPath)) &&
    !(PLATFORM.socketIsFile && existsSync(endpoint.socketPath)) &&
    !ownsStateDir();
  while (!(await gone())) {
    if (Date.now() > deadline)
      throw new CliError(
        `execd stop: the daemon (pid ${pid}) still listens or holds its state dir after ${STOP_TIMEOUT_MS}ms`,
      );
    await sleep(20);
  }
  const kept = values['keep-jobs'] ? ', running jobs left running for the next daemon' : '';
  process.stdout.write(`execd daemon stopped (pid ${pid})${kept}\n`);
  return 0;
};
