/** Signals to a terminal's foreground process group (docs/terminals.md): never by writing `\x03`. */
import type { TerminalSignalName } from '../../protocol/terminal.js';
import type { Terminal } from './terminal.js';

/** How long a send waits for the prompt a signal to a foreground job brings back. */
export const PROMPT_AFTER_SIGNAL_MS = 1_000;

/**
 * Delivers `signal` to the terminal's foreground group; `pgid` null when there is none (exited).
 * A signal to a job of a shell terminal makes the next send wait for the prompt it brings back.
 */
export function signalForeground(
  terminal: Terminal,
  signal: TerminalSignalName,
): { delivered: boolean; pgid: number | null } {
  const pgid = terminal.foregroundPgid() ?? (terminal.running && terminal.pid > 0 ? terminal.pid : undefined);
  if (pgid === undefined) return { delivered: false, pgid: null };
  try {
    process.kill(-pgid, signal);
    if (terminal.isShell && pgid !== (terminal.shellPgid ?? terminal.pid)) {
      terminal.promptDueUntil = Date.now() + PROMPT_AFTER_SIGNAL_MS;
    }
    return { delivered: true, pgid };
  } catch {
    return { delivered: false, pgid };
  }
}
