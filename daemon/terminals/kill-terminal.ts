/**
 * Killing everything on a terminal (docs/terminals.md): the program, its jobs, and anything else still in
 * its session, disowned children included. SIGHUP and SIGTERM first (what closing a terminal
 * window sends; an interactive bash ignores SIGTERM alone), SIGKILL after `graceMs` to whatever is
 * left. Each process is matched by pid and start time, so a reused pid is never hit.
 */
import { signallable, terminateGroup } from '../executor/kill.js';
import { HAS_PROC, readProcUid } from '../../shared/proc.js';
import { isLiveState, processesInSession, readTtyStat, type TtyStat } from './tty-proc.js';

/** Interval at which a dying terminal is re-scanned. */
const POLL_MS = 20;
/** How long SIGKILLed processes get to disappear before the kill gives up. */
const SIGKILL_SETTLE_MS = 5_000;

/** True while the process is the one seen (same start time) and not a zombie. */
function stillThere(proc: TtyStat): boolean {
  const now = readTtyStat(proc.pid);
  return now !== undefined && now.startTime === proc.startTime && isLiveState(now.state);
}

function signal(proc: TtyStat, name: NodeJS.Signals): void {
  if (!stillThere(proc)) return;
  try {
    process.kill(proc.pid, name);
  } catch {
    // Gone meanwhile.
  }
}

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

/** Resolves true once no process is left on the terminal, false after `ms`. */
async function waitEmpty(sid: number, leaderStartTime: number | undefined, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  for (;;) {
    if (terminalProcesses(sid, leaderStartTime).length === 0) return true;
    if (Date.now() >= until) return false;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
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
  if (!signallable(sid)) return 0;
  if (!HAS_PROC) {
    // Without /proc the session cannot be listed: the program's process group (or tree) is what can be reached.
    await terminateGroup(sid, graceMs);
    return 1;
  }
  const first = terminalProcesses(sid, leaderStartTime);
  if (first.length === 0) return 0;
  for (const name of ['SIGHUP', 'SIGTERM', 'SIGCONT'] as const) for (const proc of first) signal(proc, name);
  if (await waitEmpty(sid, leaderStartTime, graceMs)) return first.length;
  for (const proc of terminalProcesses(sid, leaderStartTime)) signal(proc, 'SIGKILL');
  await waitEmpty(sid, leaderStartTime, SIGKILL_SETTLE_MS);
  return first.length;
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
