/**
 * Assembles a daemon: state dir, token, configuration, socket, connections, and the graceful
 * shutdown that leaves no process, timer or socket behind.
 */
import { readFileSync } from 'node:fs';
import { configSchema, DEFAULT_CONFIG, type ConfigPatch } from '../protocol/config.js';
import { ExecdError } from '../protocol/errors.js';
import { PLATFORM, type PlatformFacts } from '../protocol/platform.js';
import { openSpillFiles } from '../spill/spill-file.js';
import { ActiveRuns } from './active-runs.js';
import { ConfigStore, parseConfigPatch, readConfigFile } from './config-store.js';
import { ClientConnection } from './connection.js';
import type { DaemonContext } from './context.js';
import { scrubEnv } from './env.js';
import { Spawner } from './executor/spawner.js';
import { HANDLERS } from './handlers/index.js';
import { announceSettlement } from './jobs/announce.js';
import { killAllJobs } from './jobs/job-control.js';
import { JobTable } from './jobs/job-table.js';
import { killOrphanedGroups } from './jobs/recovery.js';
import type { Logger } from './logger.js';
import { ProcessRegistry } from './process-registry.js';
import { createSandboxRunner } from './sandbox/runner.js';
import { SessionTable } from './sessions.js';
import { claimOwnership, type Ownership } from './ownership.js';
import { checkSocketDir, listenPrivately, type PrivateListener } from './socket.js';
import { SpillSweeper } from './spill-sweep.js';
import { checkPrivateDir, ensureToken, statePaths } from './state-dir.js';
import { probePty } from './terminals/pty.js';
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
}

/** A running daemon. */
export interface RunningDaemon {
  context: DaemonContext;
  /** Resolves when the daemon has shut down completely. */
  closed: Promise<void>;
  /** Starts a graceful shutdown and resolves when it is complete. */
  shutdown(reason: string): Promise<void>;
}

/** The package version, read once. */
export const VERSION: string = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** How long shutdown waits for the last answers to be read by their clients. */
const FLUSH_WAIT_MS = 1_000;

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** Builds the configuration from defaults, the config file and the flags; throws a one-line reason. */
function initialConfig(path: string, flags: ConfigPatch | undefined) {
  const fromFile = readConfigFile(path);
  if (fromFile instanceof ExecdError) throw new Error(fromFile.message);
  const fromFlags = parseConfigPatch(flags ?? {}, '--config');
  if (fromFlags instanceof ExecdError) throw new Error(fromFlags.message);
  const parsed = configSchema().safeParse({ ...DEFAULT_CONFIG, ...fromFile, ...fromFlags });
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
  try {
    return await startOwnedDaemon(options, platform, ownership);
  } catch (error) {
    ownership.release();
    throw error;
  }
}

async function startOwnedDaemon(
  options: DaemonOptions,
  platform: PlatformFacts,
  ownership: Ownership,
): Promise<RunningDaemon> {
  const paths = statePaths(options.stateDir);
  const config = new ConfigStore(paths.config, initialConfig(paths.config, options.configFlags));
  const startedAt = new Date();
  const stamp = startedAt.getTime().toString(36);
  let runCounter = 0;
  const connections = new Set<ClientConnection>();
  let listener: PrivateListener | undefined;
  let shutdownPromise: Promise<void> | undefined;
  let markClosed: () => void = () => {};
  const closed = new Promise<void>((resolve) => (markClosed = resolve));
  const spill = new SpillSweeper(paths.spill, openSpillFiles, () => config.get(), options.log);

  const sessions = new SessionTable();
  const processes = new ProcessRegistry();
  const spawner = new Spawner();
  spawner.start();
  const jobs = new JobTable(paths.journal, (job) => announceSettlement(job, sessions, jobs, options.log));
  // Jobs a crashed daemon left running are failed now; their groups die in the background.
  const interrupted = jobs.restore(config.get().maxOutputBytes);
  killOrphanedGroups(interrupted, processes, config.get().graceMs);
  const terminals = new TerminalTable({
    journalPath: paths.terminals,
    sessions,
    processes,
    log: options.log,
    graceMs: () => config.get().graceMs,
    idleCloseMs: () => config.get().terminalIdleCloseMs,
    keepExited: () => config.get().maxTerminalsPerSession,
  });
  // Terminals a crashed daemon left open are listed exited; their processes die in the background.
  terminals.restore();
  const terminalsUnavailable = probePty().catch((error: Error) => `cannot open a PTY: ${error.message}`);

  const context: DaemonContext = {
    version: VERSION,
    startedAt,
    stateDir: options.stateDir,
    socketPath: options.socketPath,
    paths,
    token: ensureToken(paths.token),
    platform,
    baseEnv: scrubEnv(process.env),
    log: options.log,
    config,
    sessions,
    processes,
    spawner,
    runs: new ActiveRuns(),
    jobs,
    terminals,
    terminalsUnavailable,
    sandbox: await createSandboxRunner(options.bwrapPath ?? process.env.EXECD_BWRAP ?? 'bwrap'),
    spill,
    shuttingDown: false,
    requestShutdown: (reason) => void shutdown(reason),
    nextRunName: () => `run-${stamp}-${++runCounter}`,
  };

  async function shutdown(reason: string): Promise<void> {
    shutdownPromise ??= (async () => {
      context.shuttingDown = true;
      context.log.info({ reason }, 'shutting down');
      listener?.server.close();
      const graceMs = config.get().graceMs;
      // In-flight runs are answered (aborted) before their connections go.
      await context.runs.abortWhere(() => true);
      await Promise.all([killAllJobs(jobs, graceMs), terminals.closeAll('daemon shut down')]);
      jobs.close();
      await context.processes.killLeftovers(undefined, graceMs);
      const open = [...connections];
      // Every aborted run is answered, then the answers reach their clients before the process
      // exits (a peer that does not read gets FLUSH_WAIT_MS for each step).
      await Promise.race([Promise.all(open.map((conn) => conn.answered())), delay(FLUSH_WAIT_MS)]);
      for (const conn of open) conn.close();
      await Promise.race([Promise.all(open.map((conn) => conn.gone)), delay(FLUSH_WAIT_MS)]);
      listener?.removeSocket();
      ownership.release();
      spill.stop();
      context.spawner.close();
      context.log.info('shut down');
      markClosed();
    })();
    return shutdownPromise;
  }

  await spill.start();
  listener = await listenPrivately(options.socketPath, platform, (socket) => {
    if (context.shuttingDown) {
      socket.destroy();
      return;
    }
    const conn = new ClientConnection(socket, context, HANDLERS);
    connections.add(conn);
    conn.onClose(() => {
      connections.delete(conn);
      context.sessions.detach(conn);
      // A dropped client leaves no foreground process behind; its background jobs live on.
      void context.runs.abortWhere((run) => run.owner === conn);
    });
  });
  context.log.info(
    { sandboxModes: context.sandbox.modes, sandboxUnavailable: context.sandbox.unavailable },
    context.sandbox.unavailable === undefined
      ? 'sandbox runner works'
      : 'sandbox runner unavailable: confined modes fail closed',
  );
  context.log.info({ socket: options.socketPath, stateDir: options.stateDir, version: VERSION }, 'listening');
  return { context, closed, shutdown };
}
