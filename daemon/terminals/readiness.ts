/**
 * Waiting until a terminal's program is ready for more input (docs/terminals.md), by the readiness tiers
 * in order: the prompt marker (while the shell owns the foreground), `stdin_read` from /proc,
 * `inferred_idle`, `timeout`, `session_exit`. The prompt marker is seen from the PTY's data event,
 * not from a polling loop; only the /proc tier polls.
 */
import type { CancellationToken } from 'vscode-jsonrpc';
import type { TerminalWaitReason } from '../../protocol/terminal.js';
import { HAS_PROC } from '../../shared/proc.js';
import type { MarkerEvent } from './markers.js';
import { StdinWaitDetector, terminalWaits, type TerminalWait } from './stdin-wait.js';
import type { Terminal } from './terminal.js';

/** Interval of the /proc polls (two in a row must agree). */
export const STDIN_POLL_MS = 50;

/** Why a wait ended: a readiness tier, a marker the caller asked for, or cancellation. */
export type WaitEnd =
  | { reason: TerminalWaitReason; /** The prompt marker's exit status. */ status?: number }
  | { reason: 'marker'; marker: MarkerEvent }
  | { reason: 'cancelled' };

/** How to wait. */
export interface WaitOptions {
  idleMs: number;
  timeoutMs: number;
  /** The waits on the terminal in place before the write (see `waitsBefore`). */
  before: TerminalWait[];
  token?: CancellationToken;
  /** Ends the wait with `marker` when it returns true for a private marker (a run's end marker). */
  markerEnds?: (marker: MarkerEvent) => boolean;
  /** Whether a prompt marker ends the wait (default: for shell terminals). */
  promptEnds?: (marker: MarkerEvent) => boolean;
  /**
   * Only a marker, the program's exit or the deadline ends the wait: neither silence nor a read of
   * the terminal does (a program that took SIGINT and waits for keys, like `less`, is not back at
   * the prompt).
   */
  promptOnly?: boolean;
}

/**
 * The waits in place now, taken just before writing `input` so they do not count (docs/terminals.md).
 * Input that ends a line (CR, which the PTY delivers in canonical and raw mode alike) wakes every
 * read, poll, select or epoll wait on the terminal, so each wait in place ends by itself and the
 * /proc scan (~0.3-0.8 ms here) is skipped on that hot path; text without Enter may leave a wait
 * standing (a canonical-mode `read` wakes only at the end of the line) and is scanned.
 */
export function waitsBefore(terminal: Terminal, input: string): TerminalWait[] {
  if (input.endsWith('\r')) return [];
  const slave = terminal.slaveDevice();
  if (!HAS_PROC || !terminal.running || slave === undefined) return [];
  return terminalWaits(terminal.pid, slave);
}

/** Resolves when the first tier says the terminal is ready (or the wait is cancelled). */
export function waitReady(terminal: Terminal, options: WaitOptions): Promise<WaitEnd> {
  return new Promise((resolve) => {
    const cleanups: Array<() => void> = [];
    let done = false;
    const finish = (end: WaitEnd) => {
      if (done) return;
      done = true;
      for (const cleanup of cleanups) cleanup();
      resolve(end);
    };
    if (!terminal.running) {
      finish({ reason: 'session_exit' });
      return;
    }

    cleanups.push(
      terminal.onMarker((marker, _offset, fromShell) => {
        // Only a marker the shell printed while it owned the foreground ends a wait.
        if (!fromShell) return;
        if (options.markerEnds?.(marker)) finish({ reason: 'marker', marker });
        else if (marker.kind === 'prompt' && (options.promptEnds?.(marker) ?? true))
          finish({ reason: 'prompt', status: marker.status });
      }),
    );

    let idleTimer: NodeJS.Timeout | undefined;
    const armIdle = () => {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => finish({ reason: 'inferred_idle' }), options.idleMs);
    };
    if (!options.promptOnly) {
      armIdle();
      cleanups.push(terminal.onOutput(armIdle), () => clearTimeout(idleTimer));
    }

    const deadline = setTimeout(() => finish({ reason: 'timeout' }), options.timeoutMs);
    cleanups.push(() => clearTimeout(deadline));

    const slave = terminal.slaveDevice();
    if (HAS_PROC && slave !== undefined && !options.promptOnly) {
      const detector = new StdinWaitDetector(options.before);
      const poll = setInterval(() => {
        if (terminal.running && detector.poll(terminalWaits(terminal.pid, slave))) {
          // After the daemon was descheduled, timers run before pending I/O: the shell may already
          // wait at its prompt while its end and prompt markers sit unread in the PTY (seen 117 ms
          // behind under load). One I/O turn lets output already there end the wait first.
          setImmediate(() => finish({ reason: 'stdin_read' }));
        }
      }, STDIN_POLL_MS);
      cleanups.push(() => clearInterval(poll));
    }

    cleanups.push(terminal.onExit(() => finish({ reason: 'session_exit' })));
    if (options.token) {
      const listener = options.token.onCancellationRequested(() => finish({ reason: 'cancelled' }));
      cleanups.push(() => listener.dispose());
    }
  });
}
