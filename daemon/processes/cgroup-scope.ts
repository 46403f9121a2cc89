/**
 * The `cgroup` scope: each unit is a cgroup below the daemon's own
 * (`<home>/execd-<state>/s-<session>/u-<unit>`, each a hash; cgroup v2, else a writable v1
 * `pids`/`freezer` hierarchy). A process cannot leave it by any `setsid`, fork or `exec`; listing
 * it reads one `cgroup.procs` per unit. The child enters its unit's cgroup at fork: the spawning
 * process (the daemon or its spawner process) moves itself into the cgroup, forks, and moves back,
 * synchronously, so nothing the command does can run before it is contained (moving a child after
 * `spawn` returned would race its first fork). Measured here: 0.41 ms for the move in and back of a
 * Node process.
 *
 * A root process can also move any process *into* a unit, so a kill reaches only the members that
 * descend from what the daemon started there (scope-ancestry.ts): an orphan, whose parent chain no
 * longer shows where it came from, only when it carries the unit's marker — an HMAC of the unit's
 * cgroup path under the daemon's token, which no other unit's processes carry.
 */
import { createHmac } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { readProcStat } from '../../shared/proc.js';
import type { CgroupTarget } from '../executor/spawn-messages.js';
import type { CgroupLayout } from '../limits/limit-backend.js';
import type { EnvMap } from '../runs/env.js';
import {
  cgroupHomes,
  dirName,
  procsBelow,
  procsIn,
  removeEmpty,
  subdirs,
  v1LimitHomes,
  type CgroupHome,
} from './cgroup-tree.js';
import { bootTicksNow, ownedByUnit } from './scope-ancestry.js';
import { MarkerCache, SCOPE_ENV } from './scope-marker.js';
import { readMembers, type Member, type ScopeStrategy } from './scope-strategy.js';

/**
 * The first hierarchy where the daemon can make its base cgroup and move itself in and out; undefined
 * where none can be written (unprivileged, a container). Empty cgroups an earlier daemon left go.
 */
export function writableCgroupHome(layout: CgroupLayout): CgroupHome | undefined {
  for (const home of cgroupHomes()) {
    const base = join(home.dir, layout.base);
    try {
      // The move is tried in a leaf below the base: under cgroup v2 a base that an earlier
      // daemon delegated controllers to (see limits/) may hold no process itself.
      const probe = join(base, 'probe');
      mkdirSync(probe, { recursive: true });
      writeFileSync(join(probe, 'cgroup.procs'), String(process.pid));
      writeFileSync(join(home.dir, 'cgroup.procs'), String(process.pid));
      // Empty cgroups a daemon killed with -9 left behind go; populated ones (processes that
      // outlived it) stay, to be killed with their session or at shutdown.
      removeEmpty(base);
      for (const other of Object.values(v1LimitHomes())) if (other !== undefined) removeEmpty(join(other, layout.base));
      return home;
    } catch {
      // Not writable here: the next hierarchy.
    }
  }
  return undefined;
}

/** What a cgroup scope is made of. */
export interface CgroupScopeParts {
  /** The daemon's own cgroup in the hierarchy in use. */
  home: CgroupHome;
  /** The directory below it that holds the sessions. */
  base: string;
  /** The `cgroup.procs` a spawning process returns to after the fork. */
  leave: string;
  /** The daemon's token: keys the markers. */
  secret: string;
  /** Pids never to signal: the daemon's and its spawner processes'. */
  protectedPids: () => number[];
}

/** Units found by their cgroup. */
export class CgroupScope implements ScopeStrategy {
  readonly mode = 'cgroup';
  /** A count reads every live unit's `cgroup.procs` and each member's stat: 8 ms with 120 live units. */
  readonly countTtlMs = 250;
  /** Boot ticks at which each unit's (and session's) cgroup was made by this daemon. */
  private readonly createdAt = new Map<string, number>();
  /** The session whose tracked group a pid leads, if any (set by the process registry). */
  private leaderSession: (pid: number) => string | undefined = () => undefined;
  private readonly markers = new MarkerCache();

  constructor(private readonly parts: CgroupScopeParts) {}

  get hierarchy(): string {
    return this.parts.home.kind;
  }

  knowLeaders(leaderSession: (pid: number) => string | undefined): void {
    this.leaderSession = leaderSession;
  }

  /** The unit's marker: what ties an orphan in the unit's cgroup to it. */
  env(sessionId: string, unit: string): EnvMap {
    return { [SCOPE_ENV]: this.markerOf(this.unitDir(sessionId, unit)) };
  }

  target(sessionId: string, unit: string): CgroupTarget | undefined {
    const dir = this.unitDir(sessionId, unit);
    try {
      mkdirSync(dir, { recursive: true });
    } catch {
      return undefined;
    }
    // When it was made: a process that started earlier was moved in, and is never killed with it.
    const now = readBootTicks();
    if (now !== undefined) {
      this.createdAt.set(dir, now);
      if (!this.createdAt.has(this.sessionDir(sessionId))) this.createdAt.set(this.sessionDir(sessionId), now);
    }
    return { enter: join(dir, 'cgroup.procs'), leave: this.parts.leave };
  }

  /**
   * The members of the units in question that descend from what the daemon started in them
   * (scope-ancestry.ts): a process moved into a unit from outside is left alone. Each unit is judged
   * on its own, and the processes directly in a session's cgroup (where no spawn puts any) as one more.
   */
  members(sessionId: string | undefined, unit?: string): Member[] {
    const { base } = this.parts;
    const sessions = sessionId === undefined ? subdirs(base) : [dirName('s', sessionId)];
    // A unit with the cgroups its command made below it; a session directory's own processes alone.
    const groups: Array<{ dir: string; pids: (dir: string) => number[] }> = [];
    for (const session of sessions) {
      const sessionDir = join(base, session);
      if (unit !== undefined) groups.push({ dir: join(sessionDir, dirName('u', unit)), pids: procsBelow });
      else {
        groups.push({ dir: sessionDir, pids: procsIn });
        for (const name of subdirs(sessionDir)) groups.push({ dir: join(sessionDir, name), pids: procsBelow });
      }
    }
    const spawners = this.spawners();
    const startOf = (pid: number) => readProcStat(pid)?.startTime;
    // Another session's leader moved in is never this unit's (all sessions at once: no such other).
    const mayLead = (pid: number) => {
      const owner = sessionId === undefined ? undefined : this.leaderSession(pid);
      return owner === undefined || owner === sessionId;
    };
    return groups.flatMap(({ dir, pids }) => {
      const marker = this.markerOf(dir);
      // An orphan with another unit's marker is that unit's; one without any (a command that
      // cleared its environment, `sudo`, `su -`) stays this unit's, or it would escape the kill.
      const marked = (orphan: Member) => {
        const found = this.markers.of(orphan.pid, spawners);
        return found === undefined || found === marker;
      };
      return ownedByUnit(readMembers(pids(dir), spawners), spawners, this.createdAt.get(dir), startOf, mayLead, marked);
    });
  }

  membersBySession(): Map<string, Member[]> {
    const out = new Map<string, Member[]>();
    const spawners = this.spawners();
    for (const session of subdirs(this.parts.base)) {
      const dir = join(this.parts.base, session);
      const pids = [dir, ...subdirs(dir).map((unit) => join(dir, unit))].flatMap(procsIn);
      out.set(session, readMembers(pids, spawners));
    }
    return out;
  }

  sessionKey(sessionId: string): string {
    return dirName('s', sessionId);
  }

  release(sessionId: string, unit?: string): boolean {
    const dir = unit === undefined ? this.sessionDir(sessionId) : this.unitDir(sessionId, unit);
    if (!removeEmpty(dir)) return false;
    for (const known of this.createdAt.keys())
      if (known === dir || known.startsWith(dir + sep)) this.createdAt.delete(known);
    return true;
  }

  releaseAll(): void {
    removeEmpty(this.parts.base);
  }

  forgetSession(): void {
    // The markers read at its kills: those of processes now gone.
    this.markers.prune();
  }

  private spawners(): Set<number> {
    return new Set([process.pid, ...this.parts.protectedPids()]);
  }

  private sessionDir(sessionId: string): string {
    return join(this.parts.base, dirName('s', sessionId));
  }

  private unitDir(sessionId: string, unit: string): string {
    return join(this.sessionDir(sessionId), dirName('u', unit));
  }

  /** The marker of a unit's (or session's) cgroup, from its path below the base: the same across restarts. */
  private markerOf(dir: string): string {
    const path = relative(this.parts.base, dir).split(sep).join('/');
    return createHmac('sha256', this.parts.secret).update(`execd-cgroup:${path}`).digest('hex').slice(0, 32);
  }
}

/** The boot clock now in `/proc` ticks; undefined when it cannot be read. */
function readBootTicks(): number | undefined {
  try {
    return bootTicksNow(readFileSync('/proc/uptime', 'utf8'));
  } catch {
    return undefined;
  }
}
