/**
 * Killing a process tree: SIGTERM to the whole group, SIGKILL to whatever is left after the grace
 * period, and a promise that resolves once the group is gone.
 */
import treeKill from 'tree-kill';
import { PLATFORM } from '../../protocol/platform.js';
import { forgetGroup, groupHasLiveMember, HAS_PROC, liveGroupMembers } from '../../shared/proc.js';

/** Interval at which a dying group is polled. */
const POLL_MS = 10;
/** How long to wait for the kernel to tear down a SIGKILLed group before giving up. */
const SIGKILL_SETTLE_MS = 5_000;

/**
 * True while the group (or, with tree-kill, the process) exists, unreaped zombies included: one
 * signal-0, no /proc read.
 */
export function groupExists(pgid: number): boolean {
  if (!signallable(pgid)) return false;
  try {
    process.kill(PLATFORM.killStrategy === 'process-group' ? -pgid : pgid, 0);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EPERM') return true;
    forgetGroup(pgid);
    return false;
  }
}

/** True while any process of the group (or, with tree-kill, the process) exists and is not a zombie. */
export function groupAlive(pgid: number): boolean {
  if (!groupExists(pgid)) return false;
  // The cheap check said yes; it also says yes for unreaped zombies.
  if (!HAS_PROC || PLATFORM.killStrategy !== 'process-group') return true;
  try {
    return groupHasLiveMember(pgid);
  } catch {
    // /proc cannot be listed (no descriptor left): the cheap check's yes stands.
    return true;
  }
}

/**
 * Whether `pgid` can name one tree: never 0 or 1 (`kill(-1)` signals every process the daemon's
 * user may, `kill(0)` the daemon's own group), never the daemon itself. A number that came from a
 * damaged journal must not turn into a kill of everything.
 */
export function signallable(pgid: number): boolean {
  return Number.isSafeInteger(pgid) && pgid > 1 && pgid !== process.pid;
}

/** Sends a signal to a whole tree; a tree that is already gone is not an error. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  if (!signallable(pgid)) return;
  if (PLATFORM.killStrategy === 'tree-kill') {
    treeKill(pgid, signal, () => {});
    return;
  }
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: nothing left to signal.
  }
}

/**
 * Resolves true once the group is gone, false if it still exists after `ms`. `resignal`, when
 * given, is sent to the group again at each poll: a member forked after the last signal (a fork
 * bomb keeps forking) gets it too.
 */
export async function waitGroupGone(pgid: number, ms: number, resignal?: NodeJS.Signals): Promise<boolean> {
  const until = Date.now() + ms;
  while (groupAlive(pgid)) {
    if (Date.now() >= until) return false;
    if (resignal) signalGroup(pgid, resignal);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  return true;
}

/** How a tree is terminated. */
export interface TerminateOptions {
  /**
   * Spare the group leader from the SIGTERM (SIGKILL still reaches it). For a sandbox runner that
   * leads the group and reports the exit status of the command it wraps, but would die of the
   * SIGTERM itself without passing it on: sparing it lets a command that traps SIGTERM report its
   * own exit status.
   */
  spareLeaderOnTerm?: boolean;
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

/** SIGTERM the tree, SIGKILL it after `graceMs`, and resolve once it is gone. */
export async function terminateGroup(pgid: number, graceMs: number, options: TerminateOptions = {}): Promise<void> {
  if (!signallable(pgid)) return;
  if (options.spareLeaderOnTerm) signalFollowers(pgid, 'SIGTERM');
  else signalGroup(pgid, 'SIGTERM');
  if (await waitGroupGone(pgid, graceMs)) return;
  signalGroup(pgid, 'SIGKILL');
  await waitGroupGone(pgid, SIGKILL_SETTLE_MS, 'SIGKILL');
}
