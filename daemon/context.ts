/**
 * The daemon's state, shared by every handler: configuration, sessions, processes, runs, paths.
 */
import type { ExecdError } from '../protocol/errors.js';
import type { ClientConnection } from './net/connection.js';
import type { PlatformFacts } from '../protocol/platform.js';
import type { ActiveRuns } from './runs/active-runs.js';
import type { ConfigStore } from './state/config-store.js';
import type { EnvMap } from './runs/env.js';
import type { Spawner } from './executor/spawner.js';
import type { ConfinedSpawners } from './sandbox/confined-spawner.js';
import type { JobTable } from './jobs/job-table.js';
import type { Logger } from './log/logger.js';
import type { DaemonObserver } from './observability/observer.js';
import type { ProcessRegistry } from './processes/process-registry.js';
import type { RequestKeyStore } from './request-keys/key-store.js';
import type { RegexChecker } from './waits/regex-checker.js';
import type { ProbedRunner } from './sandbox/runner.js';
import type { SessionTable } from './sessions/sessions.js';
import type { SpillUsage } from './state/spill-sweep.js';
import type { statePaths } from '../shared/state-dir.js';
import type { TerminalTable } from './terminals/terminal-table.js';

/** Everything a handler may read or change. */
export interface DaemonContext {
  readonly version: string;
  readonly startedAt: Date;
  readonly stateDir: string;
  readonly socketPath: string;
  /** URLs of the network listeners (`--listen`), filled once they listen. */
  readonly listenerUrls: string[];
  readonly paths: ReturnType<typeof statePaths>;
  readonly token: string;
  /** The administrative token (`<stateDir>/admin-token`): a connection that presents it is admin. */
  readonly adminToken: string;
  /** Secret files the daemon was given by path (TLS key, certificate, client CA, an external log file), hidden from confined commands and file methods. */
  readonly secretFiles: readonly string[];
  readonly platform: PlatformFacts;
  /** The daemon's environment, scrubbed once at start-up. */
  readonly baseEnv: EnvMap;
  readonly log: Logger;
  readonly config: ConfigStore;
  readonly sessions: SessionTable;
  readonly processes: ProcessRegistry;
  /** The spawner threads every run's and job's process is started on. */
  readonly spawner: Spawner;
  /** The warm confined spawners of the Landlock runner, one per (session, policy) (docs/sandbox-backends.md). */
  readonly confinedSpawners: ConfinedSpawners;
  readonly runs: ActiveRuns;
  /** Request keys and their answers, per session (docs/reconnect.md). */
  readonly requestKeys: RequestKeyStore;
  /** The time-bounded thread `job/wait` patterns run on. */
  readonly regex: RegexChecker;
  /** Background jobs, journaled. */
  readonly jobs: JobTable;
  /** Terminals (docs/terminals.md), journaled. */
  readonly terminals: TerminalTable;
  /** Why no PTY can be opened here (undefined: terminals work); settles once the start-up probe ran. */
  readonly terminalsUnavailable: Promise<string | undefined>;
  /** The file-sandbox runner, probed at start-up (Landlock's probe answers after the daemon listens). */
  readonly sandbox: ProbedRunner;
  /** Spill and log bytes on disk as of the last retention sweep. */
  readonly spill: SpillUsage;
  /** What watches the daemon (`--metrics`, `--audit-log`); `NO_OBSERVER` when nothing does. */
  readonly observer: DaemonObserver;
  /** True once shutdown began: new requests get SHUTTING_DOWN. */
  shuttingDown: boolean;
  /** Requests dispatched since start (what the quiet-time collection watches, heap-footprint.ts). */
  requestsHandled: number;
  /** Starts a graceful shutdown (idempotent). */
  requestShutdown(reason: string, options?: ShutdownOptions): void;
  /** Makes the coming shutdown, whoever starts it, keep the running jobs (`daemon/shutdown { keepJobs }`). */
  noteKeepJobs(): void;
  /**
   * `daemon/upgrade`: readies the upgrade in place (daemon/upgrade/upgrade.ts) and, once `caller`
   * has its answer, execs; resolves with the answer, or UPGRADE_FAILED and the daemon serves on.
   */
  requestUpgrade(caller: ClientConnection): Promise<{ pid: number; version: string; program: string } | ExecdError>;
  /** A fresh name for a foreground run's spill files. */
  nextRunName(): string;
}

/** How a shutdown ends the work. */
export interface ShutdownOptions {
  /** Leave running jobs running and journaled `running`, for the next daemon to adopt (docs/reconnect.md). */
  keepJobs?: boolean;
}
