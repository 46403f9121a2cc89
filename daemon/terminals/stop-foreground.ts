/**
 * Ending a timed-out `terminal/run` without losing the shell (docs/terminals.md): the command is the
 * terminal's foreground process group, and only that group is signalled — SIGINT, then after
 * `graceMs` without the prompt SIGTERM, then after another `graceMs` SIGKILL — so the shell keeps
 * its directory, exports, history and virtualenv. A program that takes SIGINT and stays (`less`
 * waits for keys, a server that ignores INT) is ended by TERM or KILL. Only when the shell's own
 * group holds the foreground (a loop of builtins that ignores INT) is there no group to end apart
 * from the shell: the caller then closes the terminal.
 */
import type { TerminalSignalName } from '../../protocol/terminal.js';
import { waitReady, type WaitEnd, type WaitOptions } from './readiness.js';
import { signalForeground } from './signal.js';
import type { Terminal } from './terminal.js';
import { isLiveState, processesInSession, readTtyStat } from './tty-proc.js';

/** The steps of the escalation, in order. */
const STEPS: TerminalSignalName[] = ['SIGINT', 'SIGTERM', 'SIGKILL'];

/** What stopping the foreground did. */
export interface ForegroundStop {
  /** The wait that saw the prompt come back; undefined when it did not within the escalation. */
  back: WaitEnd | undefined;
  /** The last signal sent, the group it went to and that group leader's command name. */
  signal: TerminalSignalName;
  pgid: number;
  command: string;
}

/**
 * Signals the foreground group SIGINT, SIGTERM, SIGKILL in turn, each followed by a wait of
 * `graceMs` for the shell's prompt (or the run's end marker, as `ends` says); stops at the first
 * step after which the prompt came back. Undefined when nothing could be signalled (no foreground).
 */
export async function stopForeground(
  terminal: Terminal,
  graceMs: number,
  ends: Pick<WaitOptions, 'markerEnds' | 'promptEnds'>,
): Promise<ForegroundStop | undefined> {
  let last: ForegroundStop | undefined;
  for (const signal of STEPS) {
    const pgid = terminal.foregroundPgid();
    // The shell's own group in the foreground: TERM or KILL would hit the shell itself.
    if (signal !== 'SIGINT' && (pgid === undefined || pgid === (terminal.shellPgid ?? terminal.pid))) return last;
    const command = pgid === undefined ? '' : groupCommand(terminal, pgid);
    const sent = signalForeground(terminal, signal);
    if (sent.pgid === null) return last;
    last = { back: undefined, signal, pgid: sent.pgid, command };
    const back = await waitReady(terminal, {
      idleMs: graceMs,
      timeoutMs: graceMs,
      before: [],
      promptOnly: true,
      ...ends,
    });
    if (back.reason === 'marker' || back.reason === 'prompt' || back.reason === 'session_exit') {
      last.back = back;
      return last;
    }
  }
  return last;
}

/**
 * The command name of a process group: its leader's while the leader lives, else that of the
 * group's oldest live member (in `yes | less` the leader `yes` dies of SIGINT; `less` stays).
 */
function groupCommand(terminal: Terminal, pgid: number): string {
  const leader = readTtyStat(pgid);
  if (leader && isLiveState(leader.state) && leader.pgrp === pgid) return leader.comm;
  const session = readTtyStat(terminal.pid)?.session;
  if (session === undefined) return '';
  const members = processesInSession(session).filter((stat) => stat.pgrp === pgid);
  members.sort((a, b) => a.startTime - b.startTime || a.pid - b.pid);
  return members[0]?.comm ?? '';
}
