/**
 * `execd upgrade`: the daemon replaces its program in place with the one at its path now (a
 * package updated in place), under the same pid, keeping its listeners and running jobs
 * (docs/deployment.md); returns once the new program answers `initialize`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { DaemonUpgrade } from '../../protocol/methods.js';
import { commandHelp, endpointOf, ENDPOINT_OPTIONS, parseCommand, type CommandRunner } from './args.js';
import { ADMIN_OPTIONS, connectIfRunning } from './autostart.js';
import { CliError } from './errors.js';

/** Help text of `execd upgrade`. */
export const UPGRADE_HELP = commandHelp({
  usage: 'upgrade',
  about: `Upgrades the daemon in place: it execs the execd program at its path now (after a package
update, the new one) under the same pid, so a container's init keeps its child. Its listeners stay
bound (a client connecting meanwhile waits, then is served by the new program); running jobs go
on, confined ones too, and report their real exit status; connections close and clients
reconnect; in-flight runs are aborted and terminals end, as at 'execd stop --keep-jobs'. Returns
once the new program answers, printing its version and pid. If the new program does not start,
the daemon serves on unchanged and the command fails with the reason.`,
  options: [],
  examples: ['execd upgrade', 'npm install -g execd-daemon@latest && execd upgrade'],
});

/** How long the new program may take to answer. */
const UPGRADE_TIMEOUT_MS = 90_000;

/** Runs `execd upgrade`. */
export const upgradeCommand: CommandRunner = async (argv, globals) => {
  const { values } = parseCommand('upgrade', { args: argv, options: { ...ENDPOINT_OPTIONS }, strict: true });
  const endpoint = endpointOf(values, globals);
  const client = await connectIfRunning(endpoint, ADMIN_OPTIONS);
  if (!client) throw new CliError(`execd upgrade: not running (no daemon listening on ${endpoint.socketPath})`);
  const before = client.info.daemon;
  let answer;
  try {
    answer = await client.call(DaemonUpgrade, {});
  } finally {
    client.close();
  }
  const deadline = Date.now() + UPGRADE_TIMEOUT_MS;
  for (;;) {
    const next = await connectIfRunning(endpoint, ADMIN_OPTIONS).catch(() => undefined);
    const info = next?.info.daemon;
    next?.close();
    if (info !== undefined && info.startedAt !== before.startedAt) {
      if (info.pid !== before.pid)
        throw new CliError(`execd upgrade: a daemon with another pid (${info.pid}, was ${before.pid}) answers now`);
      process.stdout.write(
        `execd daemon upgraded in place (pid ${info.pid}): ${before.version} -> ${info.version} (${answer.program})\n`,
      );
      return 0;
    }
    if (Date.now() > deadline)
      throw new CliError(
        `execd upgrade: the new program (pid ${before.pid}) did not answer within ${UPGRADE_TIMEOUT_MS}ms`,
      );
    await sleep(50);
  }
};
