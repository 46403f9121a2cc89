/** Result types of the protocol (PROTOCOL.md). Params are declared as zod schemas in `methods.ts`. */
import type { Config } from './config.js';
import type { LimitReport, LimitsCapability, SessionLimits } from './limits.js';
import type { SandboxBackendInfo, SandboxMode, SandboxPolicy } from './sandbox.js';

/** The protocol version this build speaks. */
export const PROTOCOL_VERSION = 1;

/** Every protocol version a daemon of this release speaks in `initialize`. */
export const SUPPORTED_PROTOCOL_VERSIONS: readonly number[] = [PROTOCOL_VERSION];

/** One captured stream: `text` is the tail, `spillPath` the file holding all of it. */
export interface CollectedOutput {
  /** The last bytes of the stream, at most the capture limit, decoded as UTF-8. */
  text: string;
  /** True when `text` is not the whole stream. */
  truncated: boolean;
  /** File with the complete stream; absent when nothing spilled or the spill cap was passed. */
  spillPath?: string;
  /**
   * Set when the stream's spill file could not be written or created (a full disk, no descriptors
   * left): `output could not be saved: ENOSPC: no space left on device, write`. `text` still holds
   * the tail; only the complete file is missing.
   */
  saveError?: string;
}

/** A fully resolved request: nothing below `resolve` re-defaults (docs/sessions.md). */
export interface ExecSpec {
  command: string;
  /** Exactly the argv spawned, e.g. `['bash', '-c', command]`. */
  argv: string[];
  workdir: string;
  timeoutMs: number;
  stdoutMaxBytes: number;
  /** The final merged environment; credential-shaped values are masked in replies. */
  env: Record<string, string>;
  sandboxPolicy: SandboxPolicy;
  /**
   * The unit's effective resource limits (docs/limits.md), with the session's `sessionMemoryBytes`;
   * absent when none.
   */
  limits?: SessionLimits;
}

/** What the sandbox did to a run (docs/sandbox.md). */
export interface SandboxReport {
  mode: SandboxMode;
  /** True when the command hit a denied write. */
  denied: boolean;
  /** The runner that enforced the mode, e.g. `bwrap`; absent when unconfined. */
  enforcement?: string;
  /** True when the runner failed before the command ran (background jobs). */
  runnerFailed?: boolean;
}

/** The result of a foreground run: exit facts reported independently, never an error. */
export interface ShellRunResult extends LimitReport {
  exitCode: number | null;
  signal: string | null;
  /** The executor's own timeout fired first. */
  timedOut: boolean;
  /** The caller cancelled first. Never true together with `timedOut`. */
  aborted: boolean;
  /** The daemon shut down during the run and killed it (`aborted` is true too). */
  daemonStopped?: true;
  timeoutMs: number;
  durationMs: number;
  pid: number;
  stdout: CollectedOutput;
  stderr: CollectedOutput;
  sandbox?: SandboxReport;
}

/**
 * The answer of a `shell/run` with `yieldMs` whose command still ran then (docs/reconnect.md): the same
 * process goes on as background job `jobId` of the session, and `stdout`/`stderr` hold the
 * output so far (the job's reader starts after it). A run that ended sooner answers a `ShellRunResult`.
 */
export interface YieldedRunResult {
  yielded: true;
  jobId: string;
  pid: number;
  /** ISO 8601: when the command started. */
  startedAt: string;
  /** How long it had run when it yielded. */
  durationMs: number;
  stdout: CollectedOutput;
  stderr: CollectedOutput;
  sandbox?: SandboxReport;
}

/** A background job's lifecycle state. */
export type JobStatus = 'running' | 'stopping' | 'completed' | 'killed' | 'failed' | 'lost';

/** A snapshot of one background job. */
export interface JobSnapshot extends LimitReport {
  id: string;
  kind: 'bash';
  /** The command. */
  label: string;
  ownerSession: string;
  status: JobStatus;
  /** `exit code: N`, `signal: SIGTERM`, `spawn failed: <reason>`, … */
  detail?: string;
  pid: number;
  exitCode: number | null;
  signal: string | null;
  /** ISO 8601. */
  startedAt: string;
  finishedAt?: string;
  /** Whether some connection received this job's settlement. */
  reported: boolean;
  stdoutBytes: number;
  stderrBytes: number;
  /** The stdout log file, readable with `output/read`; absent once it passed `maxSpillBytes` or was removed. */
  stdoutPath?: string;
  /** The stderr log file, as `stdoutPath`. */
  stderrPath?: string;
  sandbox?: SandboxReport;
}

/** What ended a `job/wait` (docs/reconnect.md): the job settled, a condition of `until` held, or `timeoutMs` passed. */
export type WaitEnd = 'settled' | 'output' | 'port' | 'path' | 'timeout';

/** Every `WaitEnd`, for schemas. */
export const WAIT_ENDS: readonly WaitEnd[] = ['settled', 'output', 'port', 'path', 'timeout'];

/** Reply to `job/wait`: the job's snapshot and what ended the wait. */
export type JobWaitResult = JobSnapshot & { endedBy: WaitEnd };

/** Reply to `initialize`. */
export interface InitializeResult {
  protocolVersion: typeof PROTOCOL_VERSION;
  daemon: { version: string; pid: number; platform: string; startedAt: string };
  capabilities: {
    shell: 'bash' | 'pwsh';
    background: boolean;
    sandboxModes: SandboxMode[];
    /** The sandbox runner in use and what it enforces (docs/sandbox-backends.md). */
    sandbox: SandboxBackendInfo;
    streaming: true;
    /** False when no PTY can be opened here: every terminal method then answers TERMINALS_UNAVAILABLE. */
    terminals: boolean;
    /** The resource limits enforced here (docs/limits.md). */
    limits: LimitsCapability;
  };
  /** True when `initialize` carried the administrative token: the daemon-wide methods are allowed. */
  admin?: boolean;
}

/** Reply to `session/open`. */
export interface SessionOpenResult {
  sessionId: string;
  /** True when the session already existed in the daemon. */
  reattached: boolean;
  jobs: JobSnapshot[];
}

/** A session's facts as they stand (the reply to `session/update`). */
export interface SessionUpdateResult {
  sessionId: string;
  cwd: string;
  /** Names of the session's `env` variables (values are never echoed). */
  envNames: string[];
  sandbox: { mode: SandboxMode; workspaceRoot?: string; network?: 'off'; escalationTargets: SandboxMode[] };
  /** The session's resource limits as they now stand; absent when it has none. */
  limits?: SessionLimits;
}

/** Reply to `session/close`. */
export interface SessionCloseResult {
  killedJobs: number;
  /** Terminals of the session that were running and were closed. */
  closedTerminals: number;
  removedFiles: number;
}

/** Reply to `shell/start`. */
export interface ShellStartResult {
  jobId: string;
  pid: number;
  startedAt: string;
}

/** One stream's part of a `job/read`. */
export interface ReadStream {
  /** The new text of this stream alone. */
  text: string;
  /** Whole-stream byte offset where this read began: the reader's position before it. */
  from: number;
  /** Whole-stream byte offset where `text` starts: `from`, unless the read was lossy (then later). */
  offset: number;
  /** Whole-stream byte offset where the next read starts. */
  nextOffset: number;
}

/** Reply to `job/read`: what is new since the last read. */
export interface JobReadResult {
  /** New stdout, then `[stderr]\n` and new stderr when there is any (docs/jobs.md). */
  delta: string;
  /** True when the reader fell behind the in-memory window; the log files hold everything. */
  lossy: boolean;
  stdoutSpillPath?: string;
  stderrSpillPath?: string;
  /** The same new output, stream by stream (for clients that keep stdout and stderr apart). */
  stdout: ReadStream;
  stderr: ReadStream;
  job: JobSnapshot;
}

/** One stream of a `job/peek`. */
export interface PeekedStream {
  text: string;
  /** Whole-stream byte offset of the first byte of `text`. */
  offset: number;
  /** Whole-stream byte offset to pass next time. */
  nextOffset: number;
  /** True when bytes between the asked offset and `offset` are gone (the log file passed `maxSpillBytes`). */
  lossy: boolean;
}

/** Reply to `job/peek`. */
export interface JobPeekResult {
  stdout: PeekedStream;
  stderr: PeekedStream;
  job: JobSnapshot;
}

/** Reply to `output/read`: one page of a spill or log file. */
export interface OutputReadResult {
  /** The page, decoded; it never ends inside a character (unless the file itself does). */
  text: string;
  /** Byte offset of the page's first byte. */
  offset: number;
  /** Byte offset to pass next time: the end of the page, on a character boundary. */
  nextOffset: number;
  /** True when `nextOffset` is the end of the file as it is now (a running job's log may still grow). */
  eof: boolean;
  /** The file's size now, in bytes. */
  size: number;
  /** With `encoding: 'base64'`: the page's exact bytes (then `text` is empty and pages end anywhere). */
  data?: string;
}

/** Reply to `job/clean`: the settled jobs released and the bytes of log files deleted. */
export interface JobCleanResult {
  released: number;
  bytes: number;
}

/** One session in `daemon/status`. */
export interface SessionStatus {
  sessionId: string;
  cwd: string;
  connections: number;
  runningJobs: number;
  /** Terminals of this session still running. */
  runningTerminals: number;
  /** The session's resource limits; absent when it has none. */
  limits?: SessionLimits;
  /** What the session's commands use now, from its cgroup; absent where it cannot be read. */
  usage?: SessionUsage;
}

/** A session's use of memory and CPU, read from its cgroup. */
export interface SessionUsage {
  /** Memory of all its units now, in bytes. */
  memoryBytes: number;
  /** The most they used at once, in bytes (since the session's cgroup was made). */
  memoryPeakBytes?: number;
  /** CPU time its commands used, in microseconds (those that ended too, while the session's cgroup lived). */
  cpuMicros?: number;
}

/** Reply to `daemon/status`. */
export interface DaemonStatusResult {
  version: string;
  pid: number;
  uptimeMs: number;
  sessions: SessionStatus[];
  jobs: { running: number; settled: number };
  /** Terminals still running, and exited ones still listed. */
  terminals: { running: number; exited: number };
  /** Processes the daemon is responsible for right now (runs, jobs, leftovers). */
  processes: number;
  /** Children spawned so far in the daemon itself (nothing else was running) and by its spawner process. */
  spawns: { inline: number; spawner: number };
  /**
   * The memory of the daemon and of every helper process it keeps (its spawner process, once
   * started), read from `/proc/<pid>/smaps_rollup`; empty where there is no /proc.
   */
  memory: Array<{ role: 'daemon' | 'spawner'; pid: number; rssBytes: number; pssBytes: number }>;
  /** URLs of the network listeners beside the socket (`tls://…`, `tcp://…`); empty without `--listen`. */
  listeners: string[];
  spill: { files: number; bytes: number };
  /** The sandbox runner in use and what it enforces (docs/sandbox-backends.md). */
  sandbox: SandboxBackendInfo;
  /** The resource limits enforced here (docs/limits.md). */
  limits: LimitsCapability;
  config: Config;
}

/** Params of the `$/progress` notifications of a streamed `shell/run`. */
export interface OutputProgress {
  stream: 'stdout' | 'stderr';
  text: string;
}

/** Params of the `$/progress` notifications of a `shell/run` streamed with `outputEncoding: 'base64'`. */
export interface OutputBytesProgress {
  stream: 'stdout' | 'stderr';
  /** The chunk's exact bytes, base64. */
  data: string;
}

/** Params of the `job/exited` notification. */
export interface JobExitedParams {
  sessionId: string;
  job: JobSnapshot;
}
