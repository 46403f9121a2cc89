/**
 * The one seam between the daemon and what watches it (docs/observability.md): the handlers report commands,
 * requests and file bytes to a `DaemonObserver`. With neither `--metrics` nor `--audit-log` the
 * observer is `NO_OBSERVER`, whose methods do nothing, so the hot paths never load the metrics
 * library or allocate an event: `observedCommand` returns the shared no-op watch before it builds
 * anything.
 */
import type { SandboxMode } from '../../protocol/sandbox.js';

/** What started a command: `shell/run`, `shell/start`, `terminal/run`. */
export type CommandKind = 'run' | 'job' | 'terminal_run';

/** The closed list a command's end is counted under (`execd_commands_total{result}`). */
export type CommandResult = 'ok' | 'error' | 'timeout' | 'killed' | 'oom' | 'denied';

/** How a client reached the daemon, and who it is as far as the transport tells. */
export interface PeerIdentity {
  transport: 'unix' | 'tcp' | 'tls';
  /** `HOST:PORT` of a network peer. */
  address?: string;
  /** The subject of a TLS client certificate (`CN=agent-7,O=ci`), when the peer presented one. */
  certSubject?: string;
}

/** The facts of a command as it starts (never its environment or stdin). */
export interface CommandStart {
  kind: CommandKind;
  mode: SandboxMode;
  sessionId: string;
  /** The `client.name` its connection gave in `initialize`. */
  clientName?: string;
  peer: PeerIdentity;
  cwd: string;
  command: string;
  requestKey?: string;
}

/** How a command ended. */
export interface CommandEnd {
  result: CommandResult;
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  /** Present when the run's result reports it (a memory limit's kill). */
  oomKilled?: boolean;
  /** True when the sandbox reported a denied write. */
  denied: boolean;
  durationMs: number;
  /** Bytes the command wrote to stdout and stderr together (terminals: the run's output). */
  outputBytes: number;
  /** The error code when the command never ran (`SPAWN_FAILED`, `SANDBOX_UNAVAILABLE`, …). */
  error?: string;
}

/** One command being watched, from its request to its end. */
export interface CommandWatch {
  /**
   * Its process runs (`pid`); for a run or job, the spawn duration ends at the first call. A run
   * started again after its runner lost a mount race (docs/sandbox.md) calls it again, new pid.
   */
  running(pid: number): void;
  /** It ended (once; later calls are ignored). */
  ended(end: CommandEnd): void;
}

/** What the daemon reports to whatever watches it. */
export interface DaemonObserver {
  /** False for `NO_OBSERVER`: callers skip building events. */
  readonly active: boolean;
  /** A command was asked for. */
  command(start: CommandStart): CommandWatch;
  /** A request was answered: `code` is `ok` or the error's stable name. */
  request(method: string, code: string): void;
  /** Bytes read from or written to files through the file API. */
  fsBytes(direction: 'read' | 'write', bytes: number): void;
}

/** The watch of an unobserved command. */
export const NO_WATCH: CommandWatch = { running: () => {}, ended: () => {} };

/** The observer when nothing watches: every method a no-op. */
export const NO_OBSERVER: DaemonObserver = {
  active: false,
  command: () => NO_WATCH,
  request: () => {},
  fsBytes: () => {},
};

/** Several observers as one (the metrics and the audit log). */
export function combineObservers(observers: readonly DaemonObserver[]): DaemonObserver {
  if (observers.length === 0) return NO_OBSERVER;
  if (observers.length === 1) return observers[0]!;
  return {
    active: true,
    command: (start) => {
      const watches = observers.map((observer) => observer.command(start));
      return {
        running: (pid) => watches.forEach((watch) => watch.running(pid)),
        ended: (end) => watches.forEach((watch) => watch.ended(end)),
      };
    },
    request: (method, code) => observers.forEach((observer) => observer.request(method, code)),
    fsBytes: (direction, bytes) => observers.forEach((observer) => observer.fsBytes(direction, bytes)),
  };
}
