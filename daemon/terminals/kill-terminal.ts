/**
 * Killing everything on a terminal (docs/terminals.md): the program, its jobs, and anything else still in
 * its session, disowned children included. SIGHUP and SIGTERM first (what closing a terminal
 * window sends; an interactive bash ignores SIGTERM alone), SIGKILL after `graceMs` to whatever is
 * left (processes/terminate.ts). Each process is matched by pid and start time, so a reused pid is
 * never hit.
 */
import { signallable } from '../processes/group-signals.js';
import { listedProcesses, processGroup, terminate, type Doomed } from '../processes/terminate.js';
import { HAS_PROC, readProcUid } from '../../shared/proc.js';
import { isLiveState, processesInSession, readTtyStat, type TtyStat } from './tty-proc.js';

/** The first signals of a terminal's processes: what closing a terminal window sends. */
export const TERMINAL_SIGNALS: readonly NodeJS.Signals[] = ['SIGHUP', 'SIGTERM', 'SIGCONT'];

/**
 * The live processes of the terminal's session. When a live process now holds the session's
 * number as its pid with another start time, the number was reused for a new session: none are ours.
 */
function terminalProcesses(sid: number, leaderStartTime: number | undefined): TtyStat[] {
  const leader = readTtyStat(sid);
  if (leader && isLiveState(leader.state) && leaderStartTime !== undefined && leader.startTime !== leaderStartTime)
    return [];
  return processesInSession(sid);
}

/**
 * The processes of session `sid` (the terminal program's pid, started at `leaderStartTime` clock
 * ticks), as one part of a kill. Without /proc the session cannot be listed: the program's process
 * group (or tree) is what can be reached.
 */
export function terminalSession(sid: number, leaderStartTime: number | undefined): Doomed {
  if (!HAS_PROC) return processGroup(sid);
  if (!signallable(sid)) return listedProcesses(() => [], []);
  return listedProcesses(() => terminalProcesses(sid, leaderStartTime), TERMINAL_SIGNALS);
}

/**
 * Kills every process of session `sid` (the terminal program's pid, started at `leaderStartTime`
 * clock ticks) and resolves once they are gone. Returns how many were signalled at first.
 */
export async function killTerminalProcesses(
  sid: number,
  leaderStartTime: number | undefined,
  graceMs: number,
): Promise<number> {
  const [found] = await terminate([terminalSession(sid, leaderStartTime)], graceMs);
  return found!;
}

/**
 * After a daemon crash: kills what is left of a terminal whose program had pid `pid` started at
 * `startTime`. With the program gone, processes still in its session are its own (Linux does not
 * reuse a pid while a session carries its number).
 */
export function killRecoveredTerminal(pid: number, startTime: number | undefined, graceMs: number): Promise<number> {
  // Without /proc, or without a recorded start time, nothing proves a live pid is still ours; a
  // journal that names pid 0 or 1 (session 1 is init's) or another user's program is not believed.
  if (!HAS_PROC || !signallable(pid) || startTime === undefined) return Promise.resolve(0);
  const leader = readTtyStat(pid);
  const uid = process.getuid?.();
  if (leader && isLiveState(leader.state) && uid !== undefined && (readProcUid(pid) ?? uid) !== uid)
    return Promise.resolve(0);
  return killTerminalProcesses(pid, startTime, graceMs);
}
