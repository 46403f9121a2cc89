/**
 * Signalling a process tree and telling whether it is gone: the group primitives. Killing one
 * (first signals, SIGKILL after the grace, the settle wait) is daemon/processes/terminate.ts.
 */
import treeKill from 'tree-kill';
import { PLATFORM } from '../../protocol/platform.js';
import { forgetGroup, groupHasLiveMember, HAS_PROC } from '../../shared/proc.js';

/** Interval at which a group is polled while it dies: one signal-0 a look. */
export const GROUP_POLL_MS = 10;

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

/** Resolves true once the group is gone, false if it still exists after `ms`. */
export async function waitGroupGone(pgid: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (groupAlive(pgid)) {
    if (Date.now() >= until) return false;
    await new Promise((resolve) => setTimeout(resolve, GROUP_POLL_MS));
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
