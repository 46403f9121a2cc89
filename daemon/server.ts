/**
 * Assembles a daemon: state dir, token, configuration, the journals of the daemon before, the
 * listeners, and the graceful shutdown (shutdown.ts) that leaves no process, timer or socket behind.
 */
import { resolve as resolvePath } from 'node:path';
import { configSchema, DEFAULT_CONFIG, mergeConfigPatch, type ConfigPatch } from '../protocol/config.js';
import { ExecdError } from '../protocol/errors.js';
import { PLATFORM, type PlatformFacts } from '../protocol/platform.js';
import { openSpillFiles } from '../spill/spill-file.js';
import { claimOwnership, type Ownership } from '../shared/ownership.js';
import { packageVersion } from '../shared/package-version.js';
import { checkPrivateDir, ensureToken, statePaths } from '../shared/state-dir.js';
import type { DaemonContext, ShutdownOptions } from './context.js';
import { Spawner } from './executor/spawner.js';
import { sweepAbandonedUploads } from './fs/service.js';
import { HANDLERS } from './handlers/index.js';
import { collectWhenQuiet } from './host/heap-footprint.js';
import { makeNonDumpable } from './host/non-dumpable.js';
import { followAdopted } from './jobs/adopt.js';
import { announceSettlement } from './jobs/announce.js';
import { JobTable } from './jobs/job-table.js';
import { killOrphanedGroups } from './jobs/recovery.js';
import { boundLogFile, type Logger } from './log/logger.js';
import { acceptPath } from './net/accept.js';
import { NetworkAdmission } from './net/admission.js';
import type { ClientConnection } from './net/connection.js';
import { openNetworkListeners, type ListenSpec, type NetworkListeners, type TlsFiles } from './net/listeners.js';
import { checkSocketDir, listenPrivately, type PrivateListener } from './net/socket.js';
import type { MetricsSpec } from './observability/address.js';
import type { Observability } from './observability/index.js';
import { NO_OBSERVER } from './observability/observer.js';
import { ProcessRegistry } from './processes/process-registry.js';
import { isScopeMode, ProcessScopes } from './processes/process-scopes.js';
import { restoreJobKeys } from './request-keys/job-keys.js';
import { RequestKeyStore } from './request-keys/key-store.js';
import { ActiveRuns } from './runs/active-runs.js';
import { baseEnvironment } from './runs/env.js';
import { killOrphanedRuns, RunJournal } from './runs/run-journal.js';
import { ConfinedSpawners } from './sandbox/confined-spawner.js';
import { createSandboxRunner } from './sandbox/runner.js';
import { watchIdleSessions } from './sessions/session-lifecycle.js';
import { SessionTable } from './sessions/sessions.js';
import { shutDown } from './shutdown.js';
import { ConfigStore, parseConfigPatch, readConfigFile } from './state/config-store.js';
import { SpillSweeper } from './state/spill-sweep.js';
import { probePty } from './terminals/pty.js';
import { TerminalTable } from './terminals/terminal-table.js';
import { RegexChecker } from './waits/regex-checker.js';
import { handedOver } from './upgrade/handover.js';
import { reapStrayChildren } from './jobs/inherited-children.js';
import { adoptedProbe, closeUnclaimedPipes, takeOverLocksAndChildren } from './upgrade/takeover.js';
import { execNewProgram, flushCaller, prepareUpgrade, windDown, type PreparedUpgrade } from './upgrade/upgrade.js';

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
  const inherited = takeOverLocksAndChildren(options.stateDir, options.socketPath, platform, options.log);
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
    return await Daemon.start(options, platform, ownership, observability, inherited);
  } catch (error) {
    observability?.close();
    ownership.release();
    throw error;
  }
}

/** The parts of a daemon that exist before its sandbox runner has answered its probe. */
interface Parts {
  readonly sessions: SessionTable;
  readonly token: string;
  readonly spawner: Spawner;
  readonly confinedSpawners: ConfinedSpawners;
  readonly processes: ProcessRegistry;
  readonly jobs: JobTable;
  readonly terminals: TerminalTable;
  readonly runJournal: RunJournal;
}

/** Makes the tables and the helpers' handles; starts nothing. */
function assembleParts(options: DaemonOptions, config: ConfigStore, paths: ReturnType<typeof statePaths>): Parts {
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
  const jobs: JobTable = new JobTable(
    paths.journal,
    (job) => announceSettlement(job, sessions, jobs, options.log),
    options.log,
    () => config.get(),
    paths.spill,
  );
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
  const runJournal = new RunJournal(paths.runs);
  return { sessions, token, spawner, confinedSpawners, processes, jobs, terminals, runJournal };
}

/**
 * Takes over what the daemon before left on the state dir: jobs a crashed one left running are
 * failed and jobs a `keepJobs` shutdown left running adopted (docs/reconnect.md); terminals it
 * left open are listed exited; foreground runs it left have no one to answer. Whatever is ended
 * dies in the background.
 */
function restoreJournals(parts: Parts, config: ConfigStore, log: Logger): void {
  const { jobs, processes } = parts;
  const { graceMs, maxOutputBytes } = config.get();
  const { interrupted, adopted } = jobs.restore(maxOutputBytes);
  killOrphanedGroups(interrupted, processes, graceMs, log);
  // A job handed across an upgrade in place is this process's child: its real exit status is reaped.
  for (const job of adopted) followAdopted(job, processes, maxOutputBytes, log, adoptedProbe(job, graceMs));
  closeUnclaimedPipes(adopted);
  if (adopted.length > 0) log.info({ adopted: adopted.map((job) => job.id) }, 'adopted running jobs');
  parts.terminals.restore();
  const orphanedRuns = killOrphanedRuns(parts.runJournal.open(), processes, graceMs, log);
  if (orphanedRuns > 0) log.info({ runs: orphanedRuns }, 'ending the foreground runs a crashed daemon left');
  processes.journalRuns(parts.runJournal);
}

/** A daemon that owns its state dir: its context, its listeners, its shutdown. */
class Daemon implements RunningDaemon {
  readonly context: DaemonContext;
  readonly closed: Promise<void>;
  private readonly connections = new Set<ClientConnection>();
  private readonly spill: SpillSweeper;
  private listener: PrivateListener | undefined;
  private network: NetworkListeners | undefined;
  private shutdownPromise: Promise<void> | undefined;
  /** Set by the first `keepJobs` request, whichever shutdown request starts the shutdown. */
  private keepJobsRequested = false;
  private stopTimers: Array<() => void> = [];
  private markClosed: () => void = () => {};

  /** Assembles a daemon on an owned state dir, restores its journals and listens. */
  static async start(
    options: DaemonOptions,
    platform: PlatformFacts,
    ownership: Ownership,
    observability: Observability | undefined,
    inherited: readonly number[],
  ): Promise<Daemon> {
    // The probes are child processes: they run while the configuration, journals and terminals load.
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
    const parts = assembleParts(options, config, paths);
    restoreJournals(parts, config, options.log);
    reapStrayChildren(inherited, new Set(parts.jobs.live().map((job) => job.pid)));
    const spill = new SpillSweeper(paths.spill, openSpillFiles, () => config.get(), options.log);
    const context: DaemonContext = {
      version: VERSION,
      startedAt: new Date(),
      stateDir: options.stateDir,
      socketPath: options.socketPath,
      listenerUrls: [],
      paths,
      token: parts.token,
      adminToken: ensureToken(paths.adminToken),
      secretFiles: secretFilesOf(options, config.get().logMaxFiles),
      platform,
      baseEnv: baseEnvironment(process.env, options.cleanEnv ?? false),
      log: options.log,
      config,
      sessions: parts.sessions,
      processes: parts.processes,
      spawner: parts.spawner,
      confinedSpawners: parts.confinedSpawners,
      runs: new ActiveRuns(),
      requestKeys: new RequestKeyStore(() => config.get()),
      regex: new RegexChecker(),
      jobs: parts.jobs,
      terminals: parts.terminals,
      terminalsUnavailable,
      sandbox: await sandbox,
      spill,
      observer: observability?.observer ?? NO_OBSERVER,
      shuttingDown: false,
      requestsHandled: 0,
      requestShutdown: (reason, shutdownOptions) => daemon.requestShutdown(reason, shutdownOptions),
      noteKeepJobs: () => (daemon.keepJobsRequested = true),
      requestUpgrade: (caller) => daemon.upgrade(caller),
      nextRunName: nameRuns(),
    };
    // Keyed starts of the jobs the journal kept still answer their job (docs/reconnect.md).
    restoreJobKeys(context.requestKeys, parts.jobs.list());
    const daemon = new Daemon(options, context, ownership, observability, parts.runJournal, spill);
    await daemon.startWork();
    await daemon.listen();
    daemon.logListening();
    return daemon;
  }

  private constructor(
    private readonly options: DaemonOptions,
    context: DaemonContext,
    private readonly ownership: Ownership,
    private readonly observability: Observability | undefined,
    private readonly runJournal: RunJournal,
    spill: SpillSweeper,
  ) {
    this.context = context;
    this.spill = spill;
    this.closed = new Promise<void>((resolve) => (this.markClosed = resolve));
  }

  /** Starts a graceful shutdown and resolves when it is complete; never rejects (a failed step is logged). */
  shutdown(reason: string, options: ShutdownOptions = {}): Promise<void> {
    this.shutdownPromise ??= shutDown(this.parts(), reason, this.keepJobsRequested || options.keepJobs === true)
      .catch((error: unknown) => {
        // E.g. the final journal compaction on a full disk: the process must still exit.
        this.context.log.error({ reason, err: error }, 'shutdown failed');
      })
      .finally(() => this.markClosed());
    return this.shutdownPromise;
  }

  /** The parts a shutdown or an upgrade in place ends. */
  private parts() {
    return {
      context: this.context,
      connections: [...this.connections],
      listener: this.listener,
      network: this.network,
      observability: this.observability,
      runJournal: this.runJournal,
      spill: this.spill,
      ownership: this.ownership,
      stopTimers: () => this.stopTimers.forEach((stop) => stop()),
    };
  }

  /**
   * `daemon/upgrade` (daemon/upgrade/upgrade.ts): nothing changes unless the new program loads; then
   * the daemon winds down keeping its jobs, answers, and execs. Should the exec itself fail, the
   * daemon ends as a `keepJobs` shutdown does (its jobs are adopted by the next daemon).
   */
  async upgrade(caller: ClientConnection): Promise<{ pid: number; version: string; program: string } | ExecdError> {
    if (this.shutdownPromise) return new ExecdError('SHUTTING_DOWN', 'the daemon is already shutting down');
    const prepared = await prepareUpgrade(this.parts());
    if (prepared instanceof ExecdError) return prepared;
    let finish: () => void = () => {};
    // A signal meanwhile waits for the exec: the upgrade is the shutdown of this program.
    this.shutdownPromise = new Promise<void>((resolve) => (finish = resolve));
    await windDown(this.parts(), caller, prepared);
    setImmediate(() => {
      this.execNow(prepared, caller, finish).catch((error: unknown) =>
        this.context.log.error({ err: error }, 'the upgrade in place failed'),
      );
    });
    return { pid: process.pid, version: prepared.version, program: prepared.program };
  }

  /** Once the caller has its answer: execs; should that fail, shuts down keeping the jobs. */
  private async execNow(prepared: PreparedUpgrade, caller: ClientConnection, finish: () => void): Promise<void> {
    await flushCaller(caller);
    const failure = execNewProgram(prepared, this.context);
    this.context.log.error({ reason: failure }, 'the upgrade in place failed at exec: shutting down, keeping the jobs');
    this.shutdownPromise = undefined;
    await this.shutdown('upgrade failed at exec', { keepJobs: true });
    finish();
  }

  /** What a handler calls: starts the shutdown without waiting for it. */
  private requestShutdown(reason: string, options?: ShutdownOptions): void {
    if (options?.keepJobs) this.keepJobsRequested = true;
    // shutdown() logs its own failures; this catch keeps a rejection from ending the process anyway.
    this.shutdown(reason, options).catch((error: unknown) =>
      this.context.log.error({ reason, err: error }, 'shutdown failed'),
    );
  }

  /** The sweep, the removal of abandoned uploads, and the daemon's timers. */
  private async startWork(): Promise<void> {
    const { context } = this;
    await this.spill.start();
    await sweepAbandonedUploads(context).catch((error: unknown) =>
      context.log.warn({ err: error }, 'removing abandoned upload temp files failed'),
    );
    this.stopTimers = [
      watchIdleSessions(context),
      collectWhenQuiet(
        () => context.requestsHandled,
        () => context.runs.size > 0,
      ),
    ];
  }

  /**
   * Every network listener is bound before the socket: a client (or a readiness probe) that
   * reaches the socket finds a daemon whose listeners all accept, and a listener that cannot bind
   * fails the start before any client uses the socket.
   */
  private async listen(): Promise<void> {
    const { context, options } = this;
    const accept = acceptPath(context, this.connections, HANDLERS);
    const handed = handedOver()?.listeners ?? [];
    try {
      if (options.listen?.length) {
        const listenerContext = {
          log: options.log,
          handshakeTimeoutMs: () => context.config.get().handshakeTimeoutMs,
          admission: new NetworkAdmission(() => context.config.get()),
        };
        this.network = await openNetworkListeners(
          options.listen,
          options.tls ?? {},
          listenerContext,
          accept,
          handed.filter((listener) => listener.kind === 'network').map((listener) => listener.fd),
        );
        context.listenerUrls.push(...this.network.urls);
      }
      this.listener = await listenPrivately(
        options.socketPath,
        context.platform,
        accept,
        handed.find((listener) => listener.kind === 'socket' && listener.path === options.socketPath)?.fd,
      );
    } catch (error) {
      this.network?.close();
      this.stopTimers.forEach((stop) => stop());
      // A start that fails leaves no probe behind either (its process, its scratch directory).
      await context.sandbox.settled;
      throw error;
    }
    // Ready once it answers on its socket (above) and its sandbox runner's last probe has answered.
    this.observability?.attach({
      context,
      connections: () => this.connections,
      notReady: () => {
        if (context.shuttingDown) return 'shutting down';
        if (!context.sandbox.isSettled) return 'starting: the sandbox probe has not answered yet';
        return undefined;
      },
    });
  }

  private logListening(): void {
    const { context, options } = this;
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
        listen: this.network?.urls,
        ...(this.observability?.url !== undefined && { metrics: this.observability.url }),
        ...(options.auditLog !== undefined && { auditLog: options.auditLog }),
        stateDir: options.stateDir,
        version: VERSION,
      },
      'listening',
    );
  }
}

/** Names foreground runs' spill files: the daemon's start time, then a counter. */
function nameRuns(): () => string {
  const stamp = Date.now().toString(36);
  let counter = 0;
  return () => `run-${stamp}-${++counter}`;
}
