/** `execd stop`: a graceful shutdown of the daemon; returns once its socket is gone. */
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { socketIsLive } from '../../shared/socket-probe.js';
import { DaemonShutdown } from '../../protocol/methods.js';
import { PLATFORM } from '../../protocol/platform.js';
import { commandHelp, endpointOf, ENDPOINT_OPTIONS, parseCommand, type CommandRunner } from './args.js';
import { ADMIN_OPTIONS, connectIfRunning } from './autostart.js';
import { CliError } from './errors.js';

/** Help text of `execd stop`. */
export const STOP_HELP = commandHelp({
  usage: 'stop',
  about: `Shuts the daemon down gracefully: in-flight runs are answered (aborted), every job and
process tree is killed, the journal is written and the socket removed. Returns once the socket is
gone. With no daemon running, says so and exits 0.`,
  examples: ['execd stop'],
});

/** How long a graceful shutdown may take (kills wait up to graceMs per tree, in parallel). */
const STOP_TIMEOUT_MS = 60_000;

/** Runs `execd stop`. */
export const stopCommand: CommandRunner = async (argv, globals) => {
  const { values } = parseCommand('stop', { args: argv, options: { ...ENDPOINT_OPTIONS }, strict: true });
  const endpoint = endpointOf(values, globals);
  const client = await connectIfRunning(endpoint, ADMIN_OPTIONS);
  if (!client) {
    process.stderr.write(`execd stop: not running (no daemon listening on ${endpoint.socketPath})\n`);
    return 0;
  }
  const pid = client.info.daemon.pid;
  try {
    await client.call(DaemonShutdown, {});
  } finally {
    client.close();
  }
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  const gone = async () =>
    !(await socketIsLive(endpoint.socketPath)) && !(PLATFORM.socketIsFile && existsSync(endpoint.socketPath));
  while (!(await gone())) {
    if (Date.now() > deadline)
      throw new CliError(`execd stop: the daemon (pid ${pid}) still listens after ${STOP_TIMEOUT_MS}ms`);
    await sleep(20);
  }
  process.stdout.write(`execd daemon stopped (pid ${pid})\n`);
  return 0;
};
