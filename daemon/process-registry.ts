/**
 * Every process group the daemon started and has not yet seen die: foreground runs, background
 * jobs, and leftovers (descendants that outlived their run). It is what session close, shutdown
 * and the process limit count and kill.
 */
import { groupAlive, groupExists, terminateGroup } from './executor/kill.js';
import { ProcessScopes } from './process-scopes.js';
import type { RunJournal } from './run-journal.js';

/**
 * How often a leftover that still exists is checked in /proc for a live (non-zombie) member.
 * In between, a signal-0 answers: it misses only a group whose members all died and wait unreaped.
 */
const VERIFY_MS = 1_000;

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
  private readonly verifiedAt = new WeakMap<TrackedGroup, number>();
  /** Where foreground runs are recorded while they live (and, as leftovers, after). */
  private runs: RunJournal | undefined;

  /** `scopes`: where the processes that left their group are found (none: only groups are). */
  constructor(readonly scopes: ProcessScopes = ProcessScopes.none()) {}

  /** Records every foreground run's group in `journal` from now on, for a next daemon after a crash. */
  journalRuns(journal: RunJournal): void {
    this.runs = journal;
  }

  /** Tracks a group until `untrack`. */
  track(group: TrackedGroup): TrackedGroup {
    this.groups.add(group);
    if (group.kind === 'run') this.runs?.started(group.pgid, group.sessionId);
    return group;
  }

  /** Stops tracking a group (it is gone, or its owner killed it). */
  untrack(group: TrackedGroup): void {
    this.forget(group);
  }

  private forget(group: TrackedGroup): void {
    if (this.groups.delete(group)) this.runs?.ended(group.pgid);
  }

  /**
   * Groups still tracked, after dropping leftovers that died on their own. Cheap enough for every
   * request, with hundreds of leftovers: a signal-0 per leftover, and at most once a second per
   * leftover one read of /proc (kill.ts remembers a live member of each group, so no rescan of
   * every process).
   */
  live(): TrackedGroup[] {
    const now = Date.now();
    for (const group of this.groups) {
      if (group.kind !== 'leftover') continue;
      let alive = groupExists(group.pgid);
      if (alive && now - (this.verifiedAt.get(group) ?? 0) >= VERIFY_MS) {
        this.verifiedAt.set(group, now);
        alive = groupAlive(group.pgid);
      }
      if (!alive) this.forget(group);
    }
    return [...this.groups];
  }

  /**
   * How many groups are alive, for the `maxProcesses` limit and `daemon/status`: the tracked ones
   * and, where they can be found, the groups of escaped processes (a `setsid` child of a run).
   */
  get count(): number {
    const live = this.live();
    let escaped = 0;
    for (const groups of this.escaped(live).values()) escaped += groups;
    return live.length + escaped;
  }

  /** Escaped process groups of one session (they keep it from closing for idleness, like leftovers). */
  escapedGroupsOf(sessionId: string): number {
    return this.escaped(this.live()).get(this.scopes.sessionKey(sessionId)) ?? 0;
  }

  private escaped(live: TrackedGroup[]): Map<string, number> {
    if (this.scopes.mode === 'none') return new Map();
    const pgids = new Set(live.map((group) => group.pgid));
    const sids = new Set(live.filter((group) => group.kind === 'terminal').map((group) => group.pgid));
    return this.scopes.escapedGroups({ pgids, sids });
  }

  /**
   * Kills one tracked group and stops tracking it; resolves true once it is gone, false when it
   * was no longer tracked or alive.
   */
  async terminate(group: TrackedGroup, graceMs: number): Promise<boolean> {
    if (!this.groups.has(group)) return false;
    if (!groupAlive(group.pgid)) {
      this.forget(group);
      return false;
    }
    await terminateGroup(group.pgid, graceMs);
    this.forget(group);
    return true;
  }

  /** Kills the leftovers of one session (its runs and jobs are killed by their owners). */
  async killLeftovers(sessionId: string | undefined, graceMs: number): Promise<number> {
    const doomed = this.live().filter(
      (group) => group.kind === 'leftover' && (sessionId === undefined || group.sessionId === sessionId),
    );
    await Promise.all(doomed.map((group) => terminateGroup(group.pgid, graceMs)));
    for (const group of doomed) this.forget(group);
    return doomed.length;
  }
}
