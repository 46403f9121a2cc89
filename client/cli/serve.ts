/** `execd serve`: run the daemon, in the foreground or detached. */
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import {
  checkTlsFiles,
  daemonIsIdle,
  loadDaemon,
  parseListenUrl,
  parseMetricsUrl,
  watchIdle,
} from '../../daemon/index.js';
import { sandboxModeSchema } from '../../protocol/sandbox.js';
import { liveHolder } from '../../shared/lock-file.js';
import { stateLockPath } from '../../shared/ownership.js';
import { socketIsLive } from '../../shared/socket-probe.js';
import { resolveEndpoint } from '../endpoint.js';
import { parseCommand, type CommandRunner } from './args.js';
import { parseConfigPairs } from './config-pairs.js';
import { reportStart, startDetached } from '../detach.js';
import { asCliError } from './autostart.js';
import { CliError, usageError } from './errors.js';

/** Help text of `execd serve`. */
export const SERVE_HELP = `usage: execd serve [--socket PATH] [--state-dir DIR] [--log-level LEVEL] [--detach]
                   [--sandbox MODE] [--clean-env] [--config KEY=VALUE ...] [--idle-exit-ms MS] [--log-file FILE]
                   [--listen tls://HOST:PORT ... --tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]
                   [--metrics http://HOST:PORT] [--audit-log FILE]

Runs the execd daemon: in the foreground logging JSON lines to stderr, or with --detach in the
background logging to <state-dir>/execd.log (the command returns once the daemon listens).

  --socket PATH        socket to listen on (default: $EXECD_SOCKET, else $XDG_RUNTIME_DIR/execd/execd.sock)
  --state-dir DIR      token, config.json, journal, spill files (default: $EXECD_STATE_DIR, else ~/.local/state/execd)
  --log-level LEVEL    trace, debug, info, warn, error (default: $EXECD_LOG_LEVEL, else info)
  --detach             start the daemon in the background and return once it listens; when one
                       already answers on the socket, say so and exit 0
  --sandbox MODE       default sandbox mode: read-only, workspace-write, danger-full-access
  --clean-env          commands start from a clean base environment (user, home, locale, system PATH),
                       not the daemon's own (also EXECD_CLEAN_ENV=1, which auto-started daemons see)
  --config KEY=VALUE   a configuration field, e.g. --config timeoutMs=60000 (repeatable)
  --idle-exit-ms MS    shut down after MS with no client session held and nothing running
  --log-file FILE      log to FILE instead of stderr
  --listen URL         also listen on tls://HOST:PORT (or tcp://HOST:PORT on loopback only); repeatable
  --tls-cert FILE      the server certificate (PEM, may include the chain) of the tls:// listeners
  --tls-key FILE       its private key (PEM)
  --tls-client-ca FILE require clients to present a certificate signed by this CA (PEM)
  --metrics URL        serve GET /healthz, /readyz and /metrics (Prometheus) on http://HOST:PORT
                       (or tcp://); https:// (or tls://) with --tls-cert and --tls-key; no token
  --audit-log FILE     one JSON line per command started and ended (no output, no env values),
                       rotated by size like the daemon log (logMaxBytes, logMaxFiles)

Example: execd serve --detach --log-level debug --config graceMs=1000
`;

/** `execd daemon already running …` when a daemon answers at the endpoint's socket, else undefined. */
async function runningDaemon(endpoint: { socketPath: string; stateDir: string }): Promise<string | undefined> {
  if (!(await socketIsLive(endpoint.socketPath))) return undefined;
  const holder = liveHolder(stateLockPath(endpoint.stateDir));
  const pid = holder ? ` (pid ${holder.pid})` : '';
  return `execd daemon already running${pid} on ${endpoint.socketPath}; nothing started`;
}

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/** Runs `execd serve`; resolves with the exit code once the daemon has shut down (or, detached, listens). */
export const serveCommand: CommandRunner = async (argv) => {
  const { values } = parseCommand('serve', {
    args: argv,
    options: {
      socket: { type: 'string' },
      'state-dir': { type: 'string' },
      'log-level': { type: 'string', default: process.env.EXECD_LOG_LEVEL || 'info' },
      detach: { type: 'boolean', default: false },
      sandbox: { type: 'string' },
      config: { type: 'string', multiple: true, default: [] },
      'idle-exit-ms': { type: 'string' },
      'log-file': { type: 'string' },
      listen: { type: 'string', multiple: true, default: [] },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      'tls-client-ca': { type: 'string' },
      metrics: { type: 'string' },
      'audit-log': { type: 'string' },
      'clean-env': { type: 'boolean', default: false },
    },
    strict: true,
  });
  const level = values['log-level'];
  if (!LOG_LEVELS.includes(level))
    throw usageError('serve', `--log-level must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(level)}`);
  const idleExitMs = values['idle-exit-ms'] === undefined ? 0 : Number(values['idle-exit-ms']);
  if (!(Number.isFinite(idleExitMs) && idleExitMs >= 0)) {
    throw usageError(
      'serve',
      `--idle-exit-ms must be a non-negative number of milliseconds, got ${JSON.stringify(values['idle-exit-ms'])}`,
    );
  }
  const configFlags = parseConfigPairs(values.config, 'serve', '--config');
  if (values.sandbox !== undefined) {
    const mode = sandboxModeSchema().safeParse(values.sandbox);
    if (!mode.success)
      throw usageError(
        'serve',
        `--sandbox must be one of ${sandboxModeSchema().options.join(', ')}, got ${JSON.stringify(values.sandbox)}`,
      );
    configFlags.defaultSandboxMode = mode.data;
  }
  const endpoint = resolveEndpoint({ socketPath: values.socket, stateDir: values['state-dir'] });
  const listen = values.listen.map((raw) => {
    const spec = parseListenUrl(raw);
    if (typeof spec === 'string') throw usageError('serve', spec);
    return spec;
  });
  // Absolute: a detached daemon runs in `/`.
  const absolute = (path: string | undefined) => (path === undefined ? undefined : resolve(path));
  const tls = {
    cert: absolute(values['tls-cert']),
    key: absolute(values['tls-key']),
    clientCa: absolute(values['tls-client-ca']),
  };
  const metrics = values.metrics === undefined ? undefined : parseMetricsUrl(values.metrics);
  if (typeof metrics === 'string') throw usageError('serve', metrics);
  const auditLog = absolute(values['audit-log']);
  const tlsRefusal = checkTlsFiles(listen, tls, metrics?.tls === true);
  if (tlsRefusal) throw usageError('serve', tlsRefusal);

  if (values.detach) {
    // Asked for what already is (a second `serve --detach`): say so and succeed.
    const running = await runningDaemon(endpoint);
    if (running) {
      process.stdout.write(`${running}\n`);
      return 0;
    }
    // The detached daemon gets the same flags, minus --detach; it logs to the state dir.
    const serveArgs = argv.filter((arg) => arg !== '--detach');
    // The TLS files and the audit log again, as absolute paths (the last occurrence of a flag wins).
    for (const [flag, path] of [
      ['--tls-cert', tls.cert],
      ['--tls-key', tls.key],
      ['--tls-client-ca', tls.clientCa],
      ['--audit-log', auditLog],
    ] as const)
      if (path !== undefined) serveArgs.push(flag, path);
    let started: Awaited<ReturnType<typeof startDetached>>;
    try {
      started = await startDetached(endpoint, serveArgs);
    } catch (error) {
      // A racing starter won: its daemon serves, which is what was asked for.
      const winner = await runningDaemon(endpoint);
      if (!winner) throw asCliError(error);
      process.stdout.write(`${winner}\n`);
      return 0;
    }
    const { pid, logPath } = started;
    process.stdout.write(`execd daemon started (pid ${pid}) on ${endpoint.socketPath}; log: ${logPath}\n`);
    return 0;
  }

  // The daemon's modules load only here: every client command starts without them (B5).
  const { createLogger, startDaemon, closedFds } = await loadDaemon();
  const logFile = values['log-file'];
  if (logFile) mkdirSync(dirname(logFile), { recursive: true, mode: 0o700 });
  if (auditLog) mkdirSync(dirname(auditLog), { recursive: true, mode: 0o700 });
  const log = createLogger(level, logFile ? { kind: 'file', path: logFile } : { kind: 'stderr' });
  if (closedFds.length > 0) log.debug({ fds: closedFds }, 'closed descriptors inherited from the parent');
  // Handlers first: the daemon says `listening` before startDaemon returns, and a signal sent on
  // that line must not meet the default action (an exit with no shutdown at all). One that comes
  // during the start is acted on once the daemon runs.
  let serving: Awaited<ReturnType<typeof startDaemon>> | undefined;
  let signalledBeforeStart: NodeJS.Signals | undefined;
  // `on`, not `once`: a repeated signal during the shutdown must not kill the daemon before it has
  // killed every process tree (the shutdown is idempotent and bounded by graceMs).
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.on(signal, () => {
      if (serving) serving.context.requestShutdown(signal);
      else signalledBeforeStart ??= signal;
    });
  }
  let daemon;
  try {
    // EXECD_CLEAN_ENV reaches a daemon the clients auto-start: they pass their environment on.
    const cleanEnv = values['clean-env'] || process.env.EXECD_CLEAN_ENV === '1';
    daemon = await startDaemon({
      ...endpoint,
      log,
      configFlags,
      listen,
      tls,
      cleanEnv,
      logFile: logFile || undefined,
      ...(metrics && { metrics }),
      ...(auditLog !== undefined && { auditLog }),
    });
  } catch (error) {
    const message = (error as Error).message;
    // In the foreground the one line below says it; a detached daemon has only its log.
    if (logFile) log.error({ err: message }, 'cannot start');
    await reportStart({ ready: false, error: message });
    throw new CliError(`execd serve: ${message}`);
  }
  const running = daemon;
  serving = running;
  if (signalledBeforeStart) running.context.requestShutdown(signalledBeforeStart);
  const stopIdleWatch =
    idleExitMs > 0
      ? watchIdle(
          () => daemonIsIdle(running.context),
          idleExitMs,
          () => running.context.requestShutdown('idle'),
        )
      : undefined;
  await reportStart({ ready: true, pid: process.pid });
  await running.closed;
  stopIdleWatch?.();
  return 0;
};
