/**
 * Assembles a daemon: state dir, token, configuration, socket, connections, and the graceful
 * shutdown that leaves no process, timer or socket behind.
 */
import { resolve as resolvePath } from 'node:path';
import type { Socket } from 'node:net';
import type { Message } from 'vscode-jsonrpc';
import { configSchema, DEFAULT_CONFIG, mergeConfigPatch, type ConfigPatch } from '../protocol/config.js';
import { ExecdError } from '../protocol/errors.js';
import { frameMessage } from '../protocol/framing.js';
import { PLATFORM, type PlatformFacts } from '../protocol/platform.js';
import { openSpillFiles } from '../spill/spill-file.js';
import { ActiveRuns, SHUTDOWN_ABORT, TERMINALS_DO_NOT_SURVIVE } from './runs/active-runs.js';
import { ConfigStore, parseConfigPatch, readConfigFile } from './state/config-store.js';
import { NetworkAdmission } from './net/admission.js';
import { ClientConnection, toResponseError } from './net/connection.js';
import type { DaemonContext, ShutdownOptions } from './context.js';
import { baseEnvironment } from './runs/env.js';
import { terminateGroup } from './executor/kill.js';
import { Spawner } from './executor/spawner.js';
import { ConfinedSpawners } from './sandbox/confined-spawner.js';
import { HANDLERS } from './handlers/index.js';
import { announceSettlement } from './jobs/announce.js';
import { followAdopted } from './jobs/adopt.js';
import { keepOrKillJobs, killAllJobs } from './jobs/job-control.js';
import { JobTable } from './jobs/job-table.js';
import { killOrphanedGroups } from './jobs/recovery.js';
import { killOrphanedRuns, RunJournal } from './runs/run-journal.js';
import { boundLogFile, type Logger } from './log/logger.js';
import { ProcessRegistry } from './processes/process-registry.js';
import { isScopeMode, killEscapedProcesses, ProcessScopes } from './processes/process-scopes.js';
import { restoreJobKeys } from './request-keys/job-keys.js';
import { RequestKeyStore } from './request-keys/key-store.js';
import { RegexChecker } from './waits/regex-checker.js';
import { createSandboxRunner } from './sandbox/runner.js';
import { collectWhenQuiet } from './host/heap-footprint.js';
import { watchIdleSessions } from './sessions/session-lifecycle.js';
import { SessionTable } from './sessions/sessions.js';
import { packageVersion } from '../shared/package-version.js';
import { claimOwnership, type Ownership } from '../shared/ownership.js';
import { openNetworkListeners, type ListenSpec, type NetworkListeners, type TlsFiles } from './net/listeners.js';
import { checkSocketDir, listenPrivately, type PrivateListener } from './net/socket.js';
import { SpillSweeper } from './state/spill-sweep.js';
import { releaseAllFiles, sweepAbandonedUploads } from './fs/service.js';
import { checkPrivateDir, ensureToken, statePaths } from '../shared/state-dir.js';
import { probePty } from './terminals/pty.js';
import { makeNonDumpable } from './host/non-dumpable.js';
import type { MetricsSpec } from './observability/address.js';
import type { Observability } from './observability/index.js';
import { NO_OBSERVER } from './observability/observer.js';
import { TerminalTable } from './terminals/terminal-table.js';

/** How to start a daemon. */
export interface DaemonOptions {
  socketPath: string;
  stateDir: string;
  log: Logger;
  /** `serve` flags: applied over the config file. */
  configFlags?: ConfigPatch;
  platform?: PlatformFacts;
  /** The bwrap executable; default `EXECD_BWRAP`, else `bwrap` on PATH. */
  bwrapPath?: string;
  /** Network listeners beside the socket (`--listen`), with their TLS material. */
  listen?: ListenSpec[];
  tls?: TlsFiles;
  /** Start commands from a clean base environment (`serve --clean-env`, `EXECD_CLEAN_ENV=1`), see env.ts. */
  cleanEnv?: boolean;
  /** The observability listener (`--metrics`): health, readiness, Prometheus metrics. */
  metrics?: MetricsSpec;
  /** The audit log of commands (`--audit-log`). */
  auditLog?: string;
  /** `--log-file`, when the log goes to a file: hidden from commands and file methods with its rotations. */
  logFile?: string;
}

/** A running daemon. */
export interface RunningDaemon {
  context: DaemonContext;
  /** Resolves when the daemon has shut down completely. */
  closed: Promise<void>;
  /** Starts a graceful shutdown and resolves when it is complete; never rejects (a failed step is logged). */
  shutdown(reason: string, options?: ShutdownOptions): Promise<void>;
}

/**
 * Files outside the state dir that no command and no file method may read: the TLS key, the
 * certificate and the client CA, and an external log file with its rotations (`<log>.1` …), absolute.
 */
function secretFilesOf(options: DaemonOptions, logMaxFiles: number): string[] {
  const { key, cert, clientCa } = options.tls ?? {};
  const files = [key, cert, clientCa].filter((file): file is string => file !== undefined);
  if (options.logFile !== undefined) {
    const log = resolvePath(options.logFile);
    files.push(log, ...Array.from({ length: Math.max(logMaxFiles, 1) }, (_, n) => `${log}.${n + 1}`));
  }
  return files.map((file) => resolvePath(file));
}

/** The package version, read once. */
export const VERSION: string = packageVersion();

/** How long shutdown waits for the last answers to be read by their clients. */
const FLUSH_WAIT_MS = 1_000;

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/**
 * Answers a connection the daemon will not serve with LIMIT_EXCEEDED (id null: no request was
 * read) and hangs up; the socket is destroyed soon even if the peer never reads.
 */
function refuseConnection(socket: Socket, message: string, log: Logger): void {
  log.warn({ reason: message }, 'connection refused');
  const error = toResponseError(new ExecdError('LIMIT_EXCEEDED', message)).toJson();
  socket.on('error', () => {});
  socket.end(frameMessage({ jsonrpc: '2.0', id: null, error } as Message));
  setTimeout(() => socket.destroy(), FLUSH_WAIT_MS).unref();
}

/** Builds the configuration from defaults, the config file and the flags; throws a one-line reason. */
function initialConfig(path: string, flags: ConfigPatch | undefined) {
  const fromFile = readConfigFile(path);
  if (fromFile instanceof ExecdError) throw new Error(fromFile.message);
  const fromFlags = parseConfigPatch(flags ?? {}, '--config');
  if (fromFlags instanceof ExecdError) throw new Error(fromFlags.message);
  const parsed = configSchema().safeParse(mergeConfigPatch(mergeConfigPatch(DEFAULT_CONFIG, fromFile), fromFlags));
  if (!parsed.success) throw new Error(`configuration: ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}

/** Starts a daemon; rejects with a one-line reason when it cannot. */
export async function startDaemon(options: DaemonOptions): Promise<RunningDaemon> {
  const platform = options.platform ?? PLATFORM;
  const refusal = checkPrivateDir(options.stateDir, platform);
  if (refusal) throw new Error(`refusing state directory: ${refusal}`);
  const socketRefusal = checkSocketDir(options.socketPath, platform);
  if (socketRefusal) throw new Error(socketRefusal);
  // Owned before anything reads the state: a second daemon must change nothing.
  const ownership = claimOwnership(options.stateDir, options.socketPath, platform);
  let observability: Observability | undefined;
  try {
    // First, so that a probe of /readyz during the start finds the listener and learns why not yet.
    // Loaded only when asked for: a daemon without either flag never reads these modules.
    if (options.metrics !== undefined || options.auditLog !== undefined) {
      const { openObservability } = await import('./observability/index.js');
      observability = await openObservability({
        ...(options.metrics && { metrics: options.metrics }),
        ...(options.auditLog !== undefined && { auditLog: options.auditLog }),
        ...(options.tls && { tls: options.tls }),
      });
    }
    return await startOwnedDaemon(options, platform, ownership, observability);
  } catch (error) {
    observability?.close();
    ownership.release();
    throw error;
  }
}

async function startOwnedDaemon(
  options: DaemonOptions,
  platform: PlatformFacts,
  ownership: Ownership,
  observability: Observability | undefined,
): Promise<RunningDaemon> {
  // The probes are child processes: they run while the configuration, journal and terminals load.
  const terminalsUnavailable = probePty().catch((error: Error) => `cannot open a PTY: ${error.message}`);
  const paths = statePaths(options.stateDir);
  const config = new ConfigStore(paths.config, initialConfig(paths.config, options.configFlags));
  const sandbox = createSandboxRunner({
    backend: config.get().sandboxBackend,
    bwrapPath: options.bwrapPath ?? process.env.EXECD_BWRAP ?? 'bwrap',
  });
  // Awaited below; should a step before that throw, its own failure is the one reported.
  sandbox.catch(() => {});
  // While the probes run, and before any command can: nothing of the same uid reads this process's memory.
  const dumpable = makeNonDumpable();
  if (dumpable) options.log.warn({ reason: dumpable }, 'the daemon stays dumpable');
  boundLogFile(options.log, () => config.get());
  const startedAt = new Date();
  const stamp = startedAt.getTime().toString(36);
  let runCounter = 0;
  const connections = new Set<ClientConnection>();
  let listener: PrivateListener | undefined;
  let network: NetworkListeners | undefined;
  let shutdownPromise: Promise<void> | undefined;
  /** Set by the first `keepJobs` request, whichever shutdown request starts the shutdown. */
  let keepJobsRequested = false;
  let stopIdleSessions = () => {};
  let stopQuietGc = () => {};
  let markClosed: () => void = () => {};
  const closed = new Promise<void>((resolve) => (markClosed = resolve));
  const spill = new SpillSweeper(paths.spill, openSpillFiles, () => config.get(), options.log);

  const sessions = new SessionTable();
  const token = ensureToken(paths.token);
  const spawner = new Spawner();
  const confinedSpawners = new ConfinedSpawners(spawner);
  const processes = new ProcessRegistry(
    ProcessScopes.detect({
      stateDir: options.stateDir,
      secret: token,
      ...(isScopeMode(process.env.EXECD_PROCESS_SCOPE) && { mode: process.env.EXECD_PROCESS_SCOPE }),
      ...(process.env.EXECD_LIMITS === 'none' && { limits: false }),
      protectedPids: () => [...spawner.pids(), ...confinedSpawners.pids()],
    }),
  );
  options.log.info(
    { processScope: processes.scopes.mode, hierarchy: processes.scopes.hierarchy },
    'processes that leave their group are found by this scope',
  );
  const jobs = new JobTable(
    paths.journal,
    (job) => announceSettlement(job, sessions, jobs, options.log),
    options.log,
    () => config.get(),
    paths.spill,
  );
  // Jobs a crashed daemon left running are failed now; their groups die in the background. Jobs a
  // keepJobs shutdown left running are this daemon's now (docs/reconnect.md).
  const { interrupted, adopted } = jobs.restore(config.get().maxOutputBytes);
  killOrphanedGroups(interrupted, processes, config.get().graceMs, options.log);
  for (const job of adopted) followAdopted(job, processes, config.get().maxOutputBytes, options.log);
  if (adopted.length > 0) options.log.info({ adopted: adopted.map((job) => job.id) }, 'adopted running jobs');
  const terminals = new TerminalTable({
    journalPath: paths.terminals,
    sessions,
    processes,
    log: options.log,
    graceMs: () => config.get().graceMs,
    idleCloseMs: () => config.get().terminalIdleCloseMs,
    keepExited: () => config.get().maxTerminalsPerSession,
    keepExitedTotal: () => config.get().maxExitedTerminals,
  });
  // Terminals a crashed daemon left open are listed exited; their processes die in the background.
  terminals.restore();
  // Foreground runs a crashed daemon left running have no one to answer: they die in the background.
  const runJournal = new RunJournal(paths.runs);
  const orphanedRuns = killOrphanedRuns(runJournal.open(), processes, config.get().graceMs, options.log);
  if (orphanedRuns > 0) options.log.info({ runs: orphanedRuns }, 'ending the foreground runs a crashed daemon left');
  processes.journalRuns(runJournal);

  const context: DaemonContext = {
    version: VERSION,
    startedAt,
    stateDir: options.stateDir,
    socketPath: options.socketPath,
    listenerUrls: [],
    paths,
    token,
    adminToken: ensureToken(paths.adminToken),
    secretFiles: secretFilesOf(options, config.get().logMaxFiles),
    platform,
    baseEnv: baseEnvironment(process.env, options.cleanEnv ?? false),
    log: options.log,
    config,
    sessions,
    processes,
    spawner,
    confinedSpawners,
    runs: new ActiveRuns(),
    requestKeys: new RequestKeyStore(() => config.get()),
    regex: new RegexChecker(),
    jobs,
    terminals,
    terminalsUnavailable,
    sandbox: await sandbox,
    spill,
    observer: observability?.observer ?? NO_OBSERVER,
    shuttingDown: false,
    requestsHandled: 0,
    requestShutdown: (reason, shutdownOptions) => {
      if (shutdownOptions?.keepJobs) keepJobsRequested = true;
      // shutdown() logs its own failures; this catch keeps a rejection from ending the process anyway.
      shutdown(reason, shutdownOptions).catch((error: unknown) =>
        options.log.error({ reason, err: error }, 'shutdown failed'),
      );
    },
    noteKeepJobs: () => {
      keepJobsRequested = true;
    },
    nextRunName: () => `run-${stamp}-${++runCounter}`,
  };

  // Keyed starts of the jobs the journal kept still answer their job (docs/reconnect.md).
  restoreJobKeys(context.requestKeys, jobs.list());

  /**
   * Runs one shutdown step; a step that fails (a full disk under the journal, …) or passes
   * `timeoutMs` is logged and the next one runs anyway, so killing the processes and removing the
   * lock never depend on it.
   */
  async function step(name: string, action: () => unknown, timeoutMs?: number): Promise<void> {
    try {
      const done = Promise.resolve(action()).then(() => true);
      const finished =
        timeoutMs === undefined ? await done : await Promise.race([done, delay(timeoutMs).then(() => false)]);
      if (!finished) context.log.error({ step: name, timeoutMs }, 'shutdown step timed out');
    } catch (error) {
      context.log.error(
        { step: name, err: error instanceof Error ? error.message : String(error) },
        'shutdown step failed',
      );
    }
  }

  async function shutdown(reason: string, shutdownOptions: ShutdownOptions = {}): Promise<void> {
    shutdownPromise ??= (async () => {
      const keepJobs = keepJobsRequested || shutdownOptions.keepJobs === true;
      context.shuttingDown = true;
      await step('log', () => context.log.info({ reason }, 'shutting down'));
      await step('stop idle sessions', stopIdleSessions);
      await step('stop the quiet-time collection', stopQuietGc);
      await step('stop listening', () => listener?.server.close());
      await step('stop listening on the network', () => network?.close());
      const graceMs = config.get().graceMs;
      // In-flight runs are answered (aborted) before their connections go.
      // A tree is gone at most graceMs + 5 s after its kill; a run or job that still has not
      // answered by then is not waited for: the step below kills every group that is left.
      const killBound = graceMs + 10_000;
      await step('abort runs', () => context.runs.abortWhere(() => true, SHUTDOWN_ABORT), killBound);
      if (keepJobs) {
        // Kept groups are no longer this daemon's: no later step kills them, nor its spawners.
        await step(
          'keep jobs',
          async () => {
            const kept = await keepOrKillJobs(jobs, processes, graceMs);
            context.spawner.keep(kept.map((job) => job.pid));
            context.confinedSpawners.keep(kept.map((job) => job.pid));
            context.log.info({ kept: kept.map((job) => job.id) }, 'running jobs left for the next daemon');
          },
          killBound,
        );
      } else await step('kill jobs', () => killAllJobs(jobs, graceMs), killBound);
      // A PTY does not outlive its master, which is this process's.
      const terminalReason = keepJobs ? TERMINALS_DO_NOT_SURVIVE : 'daemon shut down';
      await step('close terminals', () => terminals.closeAll(terminalReason), killBound);
      await step('end file transfers and watches', () => releaseAllFiles(context));
      // Landlock's probe may still be out in a daemon's first moments: its process and scratch
      // directory end with it (within the probe's own timeout).
      await step('wait for the sandbox probe', () => context.sandbox.settled);
      await step('close the journal', () => jobs.close());
      await step('kill leftovers', () => context.processes.killLeftovers(undefined, graceMs));
      // Whatever an earlier step could not end (it failed) is killed here, whatever its kind.
      await step('kill every group', () =>
        Promise.all(context.processes.live().map((group) => terminateGroup(group.pgid, graceMs))),
      );
      await step('close the run journal', () => runJournal.close());
      // The one step that ends processes outside every tracked group: a shutdown that keeps jobs
      // running across a restart skips it, or their escaped descendants would die here.
      if (!keepJobs)
        await step('kill escaped processes', () => killEscapedProcesses(context.processes.scopes, graceMs));
      const open = [...connections];
      // Every aborted run is answered, then the answers reach their clients before the process
      // exits (a peer that does not read gets FLUSH_WAIT_MS for each step).
      await step('flush answers', () =>
        Promise.race([Promise.all(open.map((conn) => conn.answered())), delay(FLUSH_WAIT_MS)]),
      );
      await step('close connections', () => {
        for (const conn of open) conn.close();
      });
      await step('wait for connections', () =>
        Promise.race([Promise.all(open.map((conn) => conn.gone)), delay(FLUSH_WAIT_MS)]),
      );
      await step('remove the socket', () => listener?.removeSocket());
      // Last: until here /readyz answers 503 shutting down, and the audit log takes the last ends.
      await step('close the observability listener and the audit log', () => observability?.close());
      await step('release the locks', () => ownership.release());
      await step('stop the sweep', () => spill.stop());
      await step('close the spawner', () => context.spawner.close());
      await step('close the confined spawners', () => context.confinedSpawners.close());
      await step('end the pattern thread', () => context.regex.close());
      await step('log', () => context.log.info('shut down'));
      markClosed();
    })().catch((error: unknown) => {
      // E.g. the final journal compaction on a full disk: the process must still exit.
      context.log.error({ reason, err: error }, 'shutdown failed');
      markClosed();
    });
    return shutdownPromise;
  }

  await spill.start();
  await sweepAbandonedUploads(context).catch((error: unknown) =>
    context.log.warn({ err: error }, 'removing abandoned upload temp files failed'),
  );
  stopIdleSessions = watchIdleSessions(context);
  stopQuietGc = collectWhenQuiet(
    () => context.requestsHandled,
    () => context.runs.size > 0,
  );
  // Every listener hands its sockets to this one accept path: the same limits for all of them.
  const accept = (socket: Socket): ClientConnection | undefined => {
    if (context.shuttingDown) {
      socket.destroy();
      return undefined;
    }
    const maxConnections = config.get().maxConnections;
    if (connections.size >= maxConnections) {
      refuseConnection(socket, `maxConnections limit reached (${maxConnections})`, options.log);
      return undefined;
    }
    const conn = new ClientConnection(socket, context, HANDLERS);
    connections.add(conn);
    conn.onClose(() => {
      connections.delete(conn);
      context.sessions.detach(conn);
      // A dropped client leaves no foreground process behind; its background jobs live on.
      context.runs
        .abortWhere((run) => run.owner === conn)
        .catch((error: unknown) => context.log.error({ conn: conn.id, err: error }, 'aborting runs failed'));
    });
    return conn;
  };
  // Every network listener is bound before the socket: a client (or a readiness probe) that
  // reaches the socket finds a daemon whose listeners all accept, and a listener that cannot bind
  // fails the start before any client uses the socket.
  try {
    if (options.listen?.length) {
      const listenerContext = {
        log: options.log,
        handshakeTimeoutMs: () => config.get().handshakeTimeoutMs,
        admission: new NetworkAdmission(() => config.get()),
      };
      network = await openNetworkListeners(options.listen, options.tls ?? {}, listenerContext, accept);
      context.listenerUrls.push(...network.urls);
    }
    listener = await listenPrivately(options.socketPath, platform, accept);
  } catch (error) {
    network?.close();
    // A start that fails leaves no probe behind either (its process, its scratch directory).
    await context.sandbox.settled;
    throw error;
  }
  // Ready once it answers on its socket (above) and its sandbox runner's last probe has answered.
  observability?.attach({
    context,
    connections: () => connections,
    notReady: () => {
      if (context.shuttingDown) return 'shutting down';
      if (!context.sandbox.isSettled) return 'starting: the sandbox probe has not answered yet';
      return undefined;
    },
  });
  // Once the last probe answers: Landlock's may do so after the daemon listens.
  context.sandbox.settled
    .then((runner) =>
      context.log.info(
        { sandboxModes: runner.modes, sandbox: runner.info },
        runner.unavailable === undefined
          ? `sandbox runner works: ${runner.backend}`
          : 'sandbox runner unavailable: confined modes fail closed',
      ),
    )
    .catch(() => {});
  context.log.info(
    {
      socket: options.socketPath,
      listen: network?.urls,
      ...(observability?.url !== undefined && { metrics: observability.url }),
      ...(options.auditLog !== undefined && { auditLog: options.auditLog }),
      stateDir: options.stateDir,
      version: VERSION,
    },
    'listening',
  );
  return { context, closed, shutdown };
}
