/**
 * Killing everything on a terminal (SPEC §9.1): the program, its jobs, and anything else still in
 * its session or on its tty, disowned children included. SIGHUP and SIGTERM first (what closing a
 * terminal window sends; an interactive bash ignores SIGTERM alone), SIGKILL after `graceMs` to
 * whatever is left. Each process is matched by pid and start time, so a reused pid is never hit.
 */
import { isLiveState, processesOnTerminal, readTtyStat, type TtyStat } from './tty-proc.js';

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

/** Sends `names` to every process on the terminal now; returns them. */
function signalAll(sid: number, ttyNr: number | undefined, names: NodeJS.Signals[]): TtyStat[] {
  const procs = processesOnTerminal(sid, ttyNr);
  for (const name of names) for (const proc of procs) signal(proc, name);
  return procs;
}

/** Resolves true once no process is left on the terminal, false after `ms`. */
async function waitEmpty(sid: number, ttyNr: number | undefined, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  for (;;) {
    if (processesOnTerminal(sid, ttyNr).length === 0) return true;
    if (Date.now() >= until) return false;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/**
 * Kills every process of session `sid` (the terminal program's pid) or on tty `ttyNr`; resolves
 * once they are gone. Returns how many processes were signalled at first.
 */
export async function killTerminalProcesses(sid: number, ttyNr: number | undefined, graceMs: number): Promise<number> {
  if (sid <= 0) return 0;
  const first = signalAll(sid, ttyNr, ['SIGHUP', 'SIGTERM', 'SIGCONT']);
  if (first.length === 0) return 0;
  if (await waitEmpty(sid, ttyNr, graceMs)) return first.length;
  signalAll(sid, ttyNr, ['SIGKILL']);
  await waitEmpty(sid, ttyNr, SIGKILL_SETTLE_MS);
  return first.length;
}

/**
 * After a daemon crash: kills what is left of a terminal whose program had pid `pid` started at
 * `startTime`. A live program with another start time means the pid was reused: nothing is touched.
 * With the program gone, processes still in its session are its own (Linux does not reuse a pid
 * while a session carries its number).
 */
export async function killRecoveredTerminal(
  pid: number,
  startTime: number | undefined,
  graceMs: number,
): Promise<number> {
  const leader = readTtyStat(pid);
  if (leader && isLiveState(leader.state) && leader.startTime !== startTime) return 0;
  return killTerminalProcesses(pid, undefined, graceMs);
}
