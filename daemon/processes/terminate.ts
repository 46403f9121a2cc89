/**
 * The one way the daemon ends processes. What is to die comes in parts — a process group, the
 * processes of a terminal's session, the processes that left their group found in a unit's scope —
 * and every part is ended alike: its first signals (SIGTERM; more for a terminal or an escaped
 * process), SIGKILL after `graceMs` to whatever is left, then up to `SIGKILL_SETTLE_MS` for the
 * kernel to tear it down, the SIGKILL sent again at each look (a fork bomb keeps forking). Runs,
 * jobs, terminals, session close and shutdown all kill through `terminate`.
 */
import { HAS_PROC, liveGroupMembers, readProcStat } from '../../shared/proc.js';
import { PLATFORM } from '../../protocol/platform.js';
import { GROUP_POLL_MS, groupAlive, signalGroup, signallable, type TerminateOptions } from './group-signals.js';
import type { ProcessScopes } from './process-scopes.js';

/** How long SIGKILLed processes get to disappear before a kill gives up on them. */
export const SIGKILL_SETTLE_MS = 5_000;
/** Interval at which processes found by listing (`/proc`, a cgroup) are listed again while they die. */
export const LIST_POLL_MS = 20;

/** Processes one kill ends together, looked at anew at each poll. */
export interface Doomed {
  /** Sends the first signals; returns how many processes (or groups) were found to send them to. */
  begin(): number;
  /** True while any of them is left. */
  left(): boolean;
  /** SIGKILL to whatever `left` last saw. */
  kill(): void;
  /** How often it is looked at, in ms: a group's signal-0 is cheap, a listing is not. */
  readonly pollMs: number;
  /** Called once the kill is over, whether all went or the settle time ran out. */
  ended?(): void;
}

/**
 * Ends every part: first signals, SIGKILL after `graceMs` to what is left, and resolves once all are
 * gone (or `SIGKILL_SETTLE_MS` later). Returns how many each part found at first; a part that found
 * none is left alone after that.
 */
export async function terminate(parts: readonly Doomed[], graceMs: number): Promise<number[]> {
  const found = parts.map((part) => part.begin());
  const active = parts.filter((_, index) => found[index]! > 0);
  try {
    if (active.length > 0 && !(await allGone(active, graceMs, false))) {
      for (const part of active) part.kill();
      await allGone(active, SIGKILL_SETTLE_MS, true);
    }
  } finally {
    for (const part of parts) part.ended?.();
  }
  return found;
}

/** Resolves true once no part has anything left, false after `ms`; `resignal` sends SIGKILL at each look. */
async function allGone(parts: readonly Doomed[], ms: number, resignal: boolean): Promise<boolean> {
  const until = Date.now() + ms;
  const pollMs = Math.max(...parts.map((part) => part.pollMs));
  for (;;) {
    const left = parts.filter((part) => part.left());
    if (left.length === 0) return true;
    if (Date.now() >= until) return false;
    if (resignal) for (const part of left) part.kill();
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/**
 * A process group (or, with tree-kill, a process tree): SIGTERM first — to every member but the
 * leader with `spareLeaderOnTerm` — then SIGKILL to the whole group. Found: 1, or 0 for a number
 * that cannot name one tree (`signallable`).
 */
export function processGroup(pgid: number, options: TerminateOptions = {}): Doomed {
  return {
    pollMs: GROUP_POLL_MS,
    begin() {
      if (!signallable(pgid)) return 0;
      if (options.spareLeaderOnTerm) signalFollowers(pgid, 'SIGTERM');
      else signalGroup(pgid, 'SIGTERM');
      return 1;
    },
    left: () => groupAlive(pgid),
    kill: () => signalGroup(pgid, 'SIGKILL'),
  };
}

/** One process found by listing: its pid and start time, so a reused pid is never signalled. */
export interface ListedProcess {
  pid: number;
  startTime: number;
}

/**
 * Processes found by `list`, listed again at each look: `firstSignals` to each at first, SIGKILL to
 * each still listed after the grace. Each is signalled only while it is the one listed (same start
 * time).
 */
export function listedProcesses(
  list: () => readonly ListedProcess[],
  firstSignals: readonly NodeJS.Signals[],
  ended?: () => void,
): Doomed {
  let seen: readonly ListedProcess[] = [];
  return {
    pollMs: LIST_POLL_MS,
    begin() {
      seen = list();
      for (const name of firstSignals) for (const proc of seen) signalProcess(proc, name);
      return seen.length;
    },
    left() {
      seen = list();
      return seen.length > 0;
    },
    kill() {
      for (const proc of seen) signalProcess(proc, 'SIGKILL');
    },
    ...(ended && { ended }),
  };
}

/** SIGTERM the tree, SIGKILL it after `graceMs`, and resolve once it is gone. */
export async function terminateGroup(pgid: number, graceMs: number, options: TerminateOptions = {}): Promise<void> {
  await terminate([processGroup(pgid, options)], graceMs);
}

/**
 * What a run or job is killed with: its process group and, when it has a unit, the processes of
 * the unit that left the group (the group's own members are the group part's to end).
 */
export function unitParts(
  scopes: ProcessScopes,
  pgid: number,
  sessionId: string,
  unit: string | undefined,
  options?: TerminateOptions,
): Doomed[] {
  const group = processGroup(pgid, options);
  if (unit === undefined) return [group];
  return [group, scopes.escaped(sessionId, unit, { spare: (member) => member.pgrp === pgid })];
}

/** Signals a process if it is still the one listed (same start time). */
function signalProcess(proc: ListedProcess, name: NodeJS.Signals): void {
  const now = readProcStat(proc.pid);
  if (!now || now.startTime !== proc.startTime) return;
  try {
    process.kill(proc.pid, name);
  } catch {
    // Gone meanwhile.
  }
}

/** Signals every live member of a group but its leader (needs /proc; else the whole group). */
function signalFollowers(pgid: number, signal: NodeJS.Signals): void {
  if (!HAS_PROC || PLATFORM.killStrategy !== 'process-group') {
    signalGroup(pgid, signal);
    return;
  }
  let members: number[];
  try {
    members = liveGroupMembers(pgid);
  } catch {
    // /proc cannot be listed (no descriptor left): the leader is signalled too rather than nobody.
    signalGroup(pgid, signal);
    return;
  }
  for (const pid of members) {
    if (pid === pgid) continue;
    try {
      process.kill(pid, signal);
    } catch {
      // Gone meanwhile.
    }
  }
}
