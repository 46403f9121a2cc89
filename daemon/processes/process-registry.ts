/**
 * Every process group the daemon started and has not yet seen die: foreground runs, background
 * jobs, and leftovers (descendants that outlived their run). It is what session close, shutdown
 * and the process limit count and kill.
 */
import { groupAlive, groupExists } from './group-signals.js';
import { ProcessScopes } from './process-scopes.js';
import { processGroup, terminate, terminateGroup } from './terminate.js';
import type { RunJournal } from '../runs/run-journal.js';

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
  constructor(readonly scopes: ProcessScopes = ProcessScopes.none()) {
    scopes.knowLeaders((pid) => {
      for (const group of this.groups) if (group.pgid === pid && group.kind !== 'leftover') return group.sessionId;
      return undefined;
    });
  }

  /** Records every foreground run's group in `journal` from now on, for a next daemon after a crash. */
  journalRuns(journal: RunJournal): void {
    this.runs = journal;
  }

  /** Spawns reserved and not yet tracked, by session: counted, so a burst cannot pass a limit. */
  private readonly reserved = new Map<string, Set<object>>();

  /**
   * Reserves one process of `sessionId` for a spawn about to start, in the same tick as the limit
   * check (no await between), so concurrent requests cannot all pass it. The spawn's `track`
   * consumes it; the returned release drops it if the spawn never came (idempotent).
   */
  reserve(sessionId: string): () => void {
    const token = {};
    let held = this.reserved.get(sessionId);
    if (!held) this.reserved.set(sessionId, (held = new Set()));
    held.add(token);
    return () => this.dropReservation(sessionId, token);
  }

  private dropReservation(sessionId: string, token?: object): void {
    const held = this.reserved.get(sessionId);
    if (!held) return;
    held.delete(token ?? held.values().next().value!);
    if (held.size === 0) this.reserved.delete(sessionId);
  }

  /** Tracks a group until `untrack`; a run, job or terminal consumes one reservation of its session. */
  track(group: TrackedGroup): TrackedGroup {
    this.groups.add(group);
    if (group.kind !== 'leftover') this.dropReservation(group.sessionId);
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
   * leftover one read of /proc (group-signals.ts remembers a live member of each group, so no rescan of
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
    let reserved = 0;
    for (const held of this.reserved.values()) reserved += held.size;
    return live.length + escaped + reserved;
  }

  /**
   * The count against `maxProcesses` when each session weighs at most `perSession`: a session
   * whose one command forked past its own limit (130 `setsid sleep` in one run) holds no more of
   * the daemon-wide budget than that limit, so the other sessions can still spawn.
   */
  budgetCount(perSession: number): number {
    const live = this.live();
    const bySession = new Map<string, number>();
    const add = (key: string, n: number) => bySession.set(key, (bySession.get(key) ?? 0) + n);
    for (const group of live) add(this.scopes.sessionKey(group.sessionId), 1);
    for (const [key, groups] of this.escaped(live)) add(key, groups);
    for (const [sessionId, held] of this.reserved) add(this.scopes.sessionKey(sessionId), held.size);
    let total = 0;
    for (const n of bySession.values()) total += Math.min(n, perSession);
    return total;
  }

  /** The same count for one session, for `maxProcessesPerSession`. */
  countOf(sessionId: string): number {
    const live = this.live();
    const own = live.filter((group) => group.sessionId === sessionId).length;
    const escaped = this.escaped(live).get(this.scopes.sessionKey(sessionId)) ?? 0;
    return own + escaped + (this.reserved.get(sessionId)?.size ?? 0);
  }

  /** Escaped process groups of one session (they keep it from closing for idleness, like leftovers). */
  escapedGroupsOf(sessionId: string): number {
    return this.escaped(this.live()).get(this.scopes.sessionKey(sessionId)) ?? 0;
  }

  private escaped(live: TrackedGroup[]): Map<string, number> {
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

  /** Kills the leftovers of one session, or of all (its runs and jobs are killed by their owners). */
  async killLeftovers(sessionId: string | undefined, graceMs: number): Promise<number> {
    const doomed = this.leftoversOf(sessionId);
    await terminate(
      doomed.map((group) => processGroup(group.pgid)),
      graceMs,
    );
    for (const group of doomed) this.forget(group);
    return doomed.length;
  }

  /**
   * Session close, once its runs, jobs and terminals are ended: kills its leftovers and whatever of
   * it left its process groups (`setsid`, a double fork), found in its scope, in one kill. Returns
   * how many escaped processes were found.
   */
  async endSession(sessionId: string, graceMs: number): Promise<number> {
    const doomed = this.leftoversOf(sessionId);
    const pgids = new Set(doomed.map((group) => group.pgid));
    const escaped = this.scopes.escaped(sessionId, undefined, { spare: (member) => pgids.has(member.pgrp) });
    const found = await terminate([escaped, ...doomed.map((group) => processGroup(group.pgid))], graceMs);
    for (const group of doomed) this.forget(group);
    return found[0]!;
  }

  /** Kills every group still tracked, whatever its kind (the last resort of a shutdown). */
  async killAll(graceMs: number): Promise<void> {
    await terminate(
      this.live().map((group) => processGroup(group.pgid)),
      graceMs,
    );
  }

  private leftoversOf(sessionId: string | undefined): TrackedGroup[] {
    return this.live().filter(
      (group) => group.kind === 'leftover' && (sessionId === undefined || group.sessionId === sessionId),
    );
  }
}
