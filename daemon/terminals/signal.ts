/** Signals to a terminal's foreground process group (SPEC §9.1): never by writing `\x03`. */
import type { TerminalSignalName } from '../../protocol/terminal.js';
import type { Terminal } from './terminal.js';

/** Delivers `signal` to the terminal's foreground group; `pgid` null when there is none (exited). */
export function signalForeground(
  terminal: Terminal,
  signal: TerminalSignalName,
): { delivered: boolean; pgid: number | null } {
  const pgid = terminal.foregroundPgid() ?? (terminal.running && terminal.pid > 0 ? terminal.pid : undefined);
  if (pgid === undefined) return { delivered: false, pgid: null };
  try {
    process.kill(-pgid, signal);
    return { delivered: true, pgid };
  } catch {
    return { delivered: false, pgid };
  }
}
