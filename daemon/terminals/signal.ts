/** Signals to a terminal's foreground process group (docs/terminals.md): never by writing `\x03`. */
import type { TerminalSignalName } from '../../protocol/terminal.js';
import type { Terminal } from './terminal.js';
import { discardTypedInput } from './typed-input.js';

/** How long a send waits for the prompt a signal to a foreground job brings back. */
export const PROMPT_AFTER_SIGNAL_MS = 1_000;

/**
 * Delivers `signal` to the terminal's foreground group; `pgid` null when there is none (exited).
 * A signal to a job of a shell terminal makes the next send wait for the prompt it brings back.
 * SIGINT also discards the input typed and not yet read, as a typed ^C does: once the program it
 * was meant for is gone, the shell would otherwise run it as a command line.
 */
export function signalForeground(
  terminal: Terminal,
  signal: TerminalSignalName,
): { delivered: boolean; pgid: number | null } {
  const pgid = terminal.foregroundPgid() ?? (terminal.running && terminal.pid > 0 ? terminal.pid : undefined);
  if (pgid === undefined) return { delivered: false, pgid: null };
  // Best effort: where it cannot be discarded (no pty path, no libc), the shell reads it as before.
  if (signal === 'SIGINT' && terminal.pid > 0) discardTypedInput(terminal.pid);
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
