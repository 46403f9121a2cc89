/** `execd status`: what the daemon is doing, without starting one. */
import { DaemonStatus } from '../../protocol/methods.js';
import type { LimitsCapability, SessionLimits } from '../../protocol/limits.js';
import type { SandboxBackendInfo } from '../../protocol/sandbox.js';
import type { DaemonStatusResult } from '../../protocol/types.js';
import type { Endpoint } from '../endpoint.js';
import { commandHelp, endpointOf, ENDPOINT_OPTIONS, parseCommand, type CommandRunner } from './args.js';
import { ADMIN_OPTIONS, connectIfRunning } from './autostart.js';
import { formatBytes, formatDuration, formatTable } from '../table.js';

/** Help text of `execd status`. */
export const STATUS_HELP = commandHelp({
  usage: 'status [--json]',
  about: `Shows the daemon's version, pid, uptime, sessions, jobs, processes and spill usage. Does not
start a daemon: exits 3 with one line when none is running.`,
  options: ['  --json             print the daemon/status result as JSON'],
  examples: ['execd status'],
});

/** Exit code of `execd status` when no daemon runs (as `systemctl status` for an inactive unit). */
export const EXIT_NOT_RUNNING = 3;

/** The sandbox runner and what it enforces, on one line (`none` with the reason when none works). */
export function formatRunner(sandbox: SandboxBackendInfo): string {
  if (sandbox.backend === null) return `none: confined modes fail closed (${sandbox.unavailable ?? 'no runner'})`;
  const abi = sandbox.landlockAbi === undefined ? '' : ` ABI ${sandbox.landlockAbi}`;
  return `${sandbox.backend}${abi}, enforces ${sandbox.enforces.join(', ')}`;
}

/** The resource limits enforced, on one line (`none` with the reason when none can be). */
export function formatLimits(limits: LimitsCapability): string {
  if (limits.enforces.length === 0) return `none (${limits.unavailable ?? 'no cgroup controller'})`;
  const partial = limits.unavailable ? ` (${limits.unavailable})` : '';
  return `${limits.backend}, enforces ${limits.enforces.join(', ')}${partial}`;
}

/** The sessions' use of memory and CPU, and their limits: one table, empty when no session has a cgroup that accounts. */
function usageTable(sessions: DaemonStatusResult['sessions']): string {
  const rows = sessions.filter((session) => session.usage !== undefined || session.limits !== undefined);
  if (rows.length === 0) return '';
  const limitsText = (limits: SessionLimits | undefined) =>
    limits === undefined
      ? '-'
      : [
          limits.memoryBytes !== undefined && `memory ${formatBytes(limits.memoryBytes)}`,
          limits.sessionMemoryBytes !== undefined && `session memory ${formatBytes(limits.sessionMemoryBytes)}`,
          limits.cpus !== undefined && `cpus ${limits.cpus}`,
          limits.pids !== undefined && `pids ${limits.pids}`,
        ]
          .filter(Boolean)
          .join(', ');
  return formatTable(
    ['SESSION', 'MEMORY', 'PEAK', 'CPU TIME', 'LIMITS'],
    rows.map((session) => [
      session.sessionId,
      session.usage ? formatBytes(session.usage.memoryBytes) : '-',
      session.usage?.memoryPeakBytes === undefined ? '-' : formatBytes(session.usage.memoryPeakBytes),
      session.usage?.cpuMicros === undefined ? '-' : formatDuration(Math.round(session.usage.cpuMicros / 1000)),
      limitsText(session.limits),
    ]),
  );
}

/** The status as text for people. */
export function formatStatus(status: DaemonStatusResult, endpoint: Endpoint): string {
  const facts = formatTable(
    ['DAEMON', ''],
    [
      ['version', status.version],
      ['pid', String(status.pid)],
      ['uptime', formatDuration(status.uptimeMs)],
      ['socket', endpoint.socketPath],
      ...status.listeners.map((url) => ['listening', url]),
      ['state dir', endpoint.stateDir],
      ['jobs', `${status.jobs.running} running, ${status.jobs.settled} settled`],
      ['terminals', `${status.terminals.running} running, ${status.terminals.exited} exited`],
      ['processes', String(status.processes)],
      ['spawns', `${status.spawns.inline} in the daemon, ${status.spawns.spawner} by its spawner process`],
      ...status.memory.map((use) => [
        `memory (${use.role})`,
        `${formatBytes(use.pssBytes)} PSS, ${formatBytes(use.rssBytes)} RSS (pid ${use.pid})`,
      ]),
      ['spill', `${status.spill.files} files, ${formatBytes(status.spill.bytes)}`],
      ['sandbox', status.config.defaultSandboxMode],
      ['sandbox runner', formatRunner(status.sandbox)],
      ['resource limits', formatLimits(status.limits)],
    ],
  );
  const sessions =
    status.sessions.length === 0
      ? 'no sessions\n'
      : formatTable(
          ['SESSION', 'CONNECTIONS', 'RUNNING JOBS', 'TERMINALS', 'CWD'],
          status.sessions.map((session) => [
            session.sessionId,
            String(session.connections),
            String(session.runningJobs),
            String(session.runningTerminals),
            session.cwd,
          ]),
        );
  const usage = usageTable(status.sessions);
  return `${facts}\n${sessions}${usage === '' ? '' : `\n${usage}`}`;
}

/** Runs `execd status`. */
export const statusCommand: CommandRunner = async (argv, globals) => {
  const { values } = parseCommand('status', {
    args: argv,
    options: { ...ENDPOINT_OPTIONS, json: { type: 'boolean', default: false } },
    strict: true,
  });
  const endpoint = endpointOf(values, globals);
  const client = await connectIfRunning(endpoint, ADMIN_OPTIONS);
  if (!client) {
    process.stderr.write(`execd status: not running (no daemon listening on ${endpoint.socketPath})\n`);
    return EXIT_NOT_RUNNING;
  }
  try {
    const status = await client.call(DaemonStatus, {});
    // A daemon reached by EXECD_URL is shown by its URL; its state dir is on its own host.
    const shown = process.env.EXECD_URL
      ? { socketPath: process.env.EXECD_URL, stateDir: '(on the daemon host)' }
      : endpoint;
    process.stdout.write(values.json ? `${JSON.stringify(status, null, 2)}\n` : formatStatus(status, shown));
    return 0;
  } finally {
    client.close();
  }
};
