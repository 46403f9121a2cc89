/**
 * Result and notification types of the terminal methods (docs/terminals.md). Params are zod
 * schemas in `methods.ts`.
 */
import type { LimitReport } from './limits.js';

/** Signals `terminal/signal` may deliver to a terminal's foreground process group. */
export const TERMINAL_SIGNALS = ['SIGINT', 'SIGQUIT', 'SIGTSTP', 'SIGTERM', 'SIGKILL'] as const;

/** A signal `terminal/signal` may deliver. */
export type TerminalSignalName = (typeof TERMINAL_SIGNALS)[number];

/**
 * What ended a `terminal/send`'s wait, in the order the tiers are checked (docs/terminals.md);
 * `not_at_prompt` only for a `terminal/run` that typed nothing, `yielded` only for a `terminal/run`
 * whose `yieldMs` passed first.
 */
export type TerminalWaitReason =
  'prompt' | 'stdin_read' | 'inferred_idle' | 'timeout' | 'session_exit' | 'not_at_prompt' | 'yielded';

/**
 * How a `terminal/run` ended. `not_at_prompt`: nothing was typed, because the daemon's own shell is
 * not waiting at its prompt (a program runs or reads the terminal, the shell was replaced by
 * `exec`, or input is still pending); use `terminal/send` to talk to what is there.
 */
export type TerminalRunState =
  | 'completed'
  | 'waiting_for_input'
  | 'idle'
  | 'timed_out'
  | 'exited'
  | 'not_at_prompt'
  /** `yieldMs` passed with the command still going: it goes on; `terminal/read` or `send` collect the rest. */
  | 'running';

/** The two renderings `terminal/read` offers: the byte stream or the current screen. */
export type TerminalView = 'stream' | 'screen';

/** One terminal as the daemon sees it now. */
export interface TerminalSnapshot {
  /** `term-<n>`, never reused, also across daemon restarts. */
  id: string;
  name?: string;
  ownerSession: string;
  /** The program the terminal runs, as spawned (before any sandbox wrapping). */
  argv: string[];
  /** The program's current directory while it runs (Linux: after the shell's `cd`), else the one it started in. */
  cwd: string;
  /** The pid of the terminal's program (the shell); 0 when it never started. */
  pid: number;
  cols: number;
  rows: number;
  status: 'running' | 'exited';
  exitCode: number | null;
  signal: string | null;
  /** Why it exited when that is not just an exit code, e.g. `daemon restarted while the terminal was open`. */
  detail?: string;
  /** The terminal's foreground process group when it is not the shell's own (a command is running). */
  foreground?: { pgid: number; command: string };
  /** True while a `terminal/send` or `terminal/run` is in flight. */
  busy: boolean;
  /** ISO 8601. */
  startedAt: string;
  exitedAt?: string;
  /** Bytes the terminal has printed since it opened (the stream's end offset). */
  outputBytes: number;
}

/** Reply to `terminal/open`. */
export interface TerminalOpenResult {
  terminal: TerminalSnapshot;
  /** The program's output until the first readiness (bounded, tail kept, private markers stripped). */
  motd: string;
}

/** Reply to `terminal/send`. */
export interface TerminalSendResult extends LimitReport {
  /** What the terminal printed after the write until readiness, bounded by `maxOutputBytes` (tail kept). */
  output: string;
  waitReason: TerminalWaitReason;
  /**
   * With `waitReason: 'prompt'`: the exit status of the command line that just ended, from the
   * shell's prompt marker (`$?` as the prompt saw it).
   */
  exitCode?: number;
  /** Stream offset just past `output`: a later `terminal/read` from here continues it. */
  cursor: number;
  /** True when `output` is not everything printed since the write. */
  truncated: boolean;
  /** The timeout that applied: the request's, else `timeoutMs`, capped by `maxTimeoutMs` of the session's bound configuration. */
  timeoutMs: number;
  terminal: TerminalSnapshot;
}

/** Reply to `terminal/run`. */
export interface TerminalRunResult extends LimitReport {
  /** What the command printed, bounded by `maxOutputBytes` (tail kept); exact between the markers when completed. */
  output: string;
  /** The command's exit status; present when `state` is `completed`. */
  exitCode?: number;
  state: TerminalRunState;
  /**
   * With `timed_out`: true when the prompt came back and the shell kept its state (SIGINT to the
   * command's process group, then SIGTERM and SIGKILL to that group, each after `graceMs`); false
   * when the shell itself did not return to its prompt and the terminal was closed.
   */
  interrupted?: boolean;
  /**
   * With `interrupted: true`: what was stopped — the terminal's foreground process group, its
   * leader's command name, and the signal after which the prompt came back.
   */
  stoppedWith?: { signal: TerminalSignalName; pgid: number; command: string };
  /** True when `output` is not the whole output. */
  truncated: boolean;
  /** Total bytes of the command's output (after CRLF → LF). */
  outputBytes: number;
  /** File holding the whole output when `output` was cut; readable with `output/read` from the same session. */
  outputSpillPath?: string;
  /**
   * Set when `output` was cut and the spill file could not be written (a full disk, no descriptors
   * left): `output could not be saved: ENOSPC: …`. `output` still holds the tail.
   */
  saveError?: string;
  /** The readiness tier that ended the wait. */
  waitReason: TerminalWaitReason;
  /** Stream offset just past what this run consumed. */
  cursor: number;
  /** The timeout that applied: the request's, else `timeoutMs`, capped by `maxTimeoutMs` of the session's bound configuration. */
  timeoutMs: number;
  terminal: TerminalSnapshot;
}

/** Reply to `terminal/read`: nothing is consumed. */
export interface TerminalReadResult {
  /** `stream`: the bytes from `offset` (CRLF → LF); `screen`: the rendered screen, one line per row. */
  text: string;
  /** The offset the text starts at (later than asked when bytes were dropped from the ring). */
  offset: number;
  /** The offset to pass next time. */
  nextOffset: number;
  /** Bytes between the asked offset and the oldest byte the ring still holds. */
  droppedBytes: number;
  /**
   * Present while the daemon's shell waits at its prompt: the exit status of the command line that
   * ended last (a command left running by an `idle` or yielded run, collected here).
   */
  exitCode?: number;
  terminal: TerminalSnapshot;
}

/** Reply to `terminal/write` and `job/write`. */
export interface WriteResult {
  /** Bytes written. */
  written: number;
}

/** Reply to `terminal/signal`. */
export interface TerminalSignalResult {
  delivered: boolean;
  /** The process group signalled; null when the terminal has exited. */
  pgid: number | null;
}

/** Reply to `terminal/attach` and `terminal/detach`. */
export interface TerminalAttachResult {
  /** Attach: the offset notifications start from; detach: the stream's end now. */
  nextOffset: number;
}

/** Reply to `terminal/close`. */
export interface TerminalCloseResult {
  /** False when the terminal had already exited (a second close is a no-op). */
  closed: boolean;
}

/** Params of the `terminal/output` notification, sent in order to attached connections. */
export interface TerminalOutputParams {
  terminalId: string;
  /** Raw output (private markers stripped; CR LF kept, as a terminal shows them). */
  data: string;
  /** Stream offset of `data`'s first byte. */
  offset: number;
}

/** Params of the `terminal/exited` notification. */
export interface TerminalExitedParams {
  sessionId: string;
  terminal: TerminalSnapshot;
}
