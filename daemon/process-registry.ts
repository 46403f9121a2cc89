/**
 * Every process group the daemon started and has not yet seen die: foreground runs, background
 * jobs, and leftovers (descendants that outlived their run). It is what session close, shutdown
 * and the process limit count and kill.
 */
import { groupAlive, terminateGroup } from './executor/kill.js';

/** What a tracked group is. */
export type TrackedKind = 'run' | 'job' | 'leftover' | 'terminal';

/** One tracked process group. */
export interface TrackedGroup {
  pgid: number;
  sessionId: string;
  kind: TrackedKind;
}

/** The daemon's table of live process groups. */
export class ProcessRegistry {
  private readonly groups = new Set<TrackedGroup>();

  /** Tracks a group until `untrack`. */
  track(group: TrackedGroup): TrackedGroup {
    this.groups.add(group);
    return group;
  }

  /** Stops tracking a group (it is gone, or its owner killed it). */
  untrack(group: TrackedGroup): void {
    this.groups.delete(group);
  }

  /** Groups still tracked, after dropping leftovers that died on their own. */
  live(): TrackedGroup[] {
    for (const group of this.groups) {
      if (group.kind === 'leftover' && !groupAlive(group.pgid)) this.groups.delete(group);
    }
    return [...this.groups];
  }

  /** How many groups are alive, for the `maxProcesses` limit and `daemon/status`. */
  get count(): number {
    return this.live().length;
  }

  /** Kills the leftovers of one session (its runs and jobs are killed by their owners). */
  async killLeftovers(sessionId: string | undefined, graceMs: number): Promise<number> {
    const doomed = this.live().filter(
      (group) => group.kind === 'leftover' && (sessionId === undefined || group.sessionId === sessionId),
    );
    await Promise.all(doomed.map((group) => terminateGroup(group.pgid, graceMs)));
    for (const group of doomed) this.groups.delete(group);
    return doomed.length;
  }
}
