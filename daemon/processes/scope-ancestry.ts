/**
 * Which processes found in a unit's cgroup the daemon may kill: only those that descend from what
 * it started there. A process with the privilege to write `cgroup.procs` (an unconfined root
 * command) can move any process into its own unit — another session's job or orphan, a process of
 * the host — and a kill of the unit must never reach it. Pure: the caller reads `/proc`.
 *
 * A member is the unit's when it started after the unit's cgroup was made, and the top of its
 * ancestry inside the unit (following parents while they are members) is either the unit's leader —
 * the earliest child of the daemon or its spawner that no other session's group is led by —, or an
 * orphan the unit may claim. An orphan is a top re-parented to init or to a reaper older than the
 * unit (a double-forked daemon): its parent chain no longer shows where it came from, so the marker
 * every command is started with, inherited by everything it forks, decides: one carrying another
 * unit's marker is that unit's; one carrying this unit's or none (it cleared its environment) is
 * this unit's. A top whose parent is the daemon but that is not the leader is another unit's
 * leader, moved in; a top whose live parent outside the unit is younger than the unit is some other
 * process's child, moved in; an orphan with another unit's marker is another session's. None of
 * them is killed.
 */

/** What the rule reads of a process. */
export interface ScopedProcess {
  pid: number;
  ppid: number;
  /** Start time in clock ticks after boot. */
  startTime: number;
}

/** The boot clock now, in the ticks of `/proc/<pid>/stat` (100 per second, the Linux USER_HZ). */
export function bootTicksNow(uptimeText: string): number | undefined {
  const seconds = Number(uptimeText.split(' ')[0]);
  return Number.isFinite(seconds) ? Math.floor(seconds * 100) : undefined;
}

/**
 * The members of one unit the daemon may kill. `createdAt` is when the unit's cgroup was made (boot
 * ticks; undefined when not known, e.g. a cgroup an earlier daemon made), `spawners` the daemon and
 * its spawner processes, `startOf` a process's start time (undefined when it is gone), `mayLead`
 * whether a child of the daemon may be this unit's leader: false for one the daemon knows leads
 * another session's group (it started within the tick the unit was made, and was moved in);
 * `marked` whether an orphan may be the unit's: no other unit's marker (asked once per orphan top).
 */
export function ownedByUnit<T extends ScopedProcess>(
  members: readonly T[],
  spawners: ReadonlySet<number>,
  createdAt: number | undefined,
  startOf: (pid: number) => number | undefined,
  mayLead: (pid: number) => boolean = () => true,
  marked: (orphan: T) => boolean = () => true,
): T[] {
  // One tick of slack: the unit's time is rounded down, the leader may start within that tick.
  const bornAfter = (startTime: number) => createdAt === undefined || startTime >= createdAt - 1;
  const byPid = new Map(members.map((member) => [member.pid, member]));
  const leader = members
    .filter((member) => spawners.has(member.ppid) && bornAfter(member.startTime) && mayLead(member.pid))
    .sort((a, b) => a.startTime - b.startTime)[0];
  const topOf = (member: T): T => {
    let at = member;
    // Bounded: a pid cycle cannot occur, but a torn read must not loop.
    for (let depth = 0; depth < members.length; depth++) {
      const parent = byPid.get(at.ppid);
      if (parent === undefined || parent === at) break;
      at = parent;
    }
    return at;
  };
  const orphanMarked = new Map<T, boolean>();
  const isUnits = (orphan: T) => {
    let known = orphanMarked.get(orphan);
    if (known === undefined) orphanMarked.set(orphan, (known = marked(orphan)));
    return known;
  };
  return members.filter((member) => {
    if (!bornAfter(member.startTime)) return false;
    const top = topOf(member);
    if (top === leader) return true;
    if (spawners.has(top.ppid) || !bornAfter(top.startTime)) return false;
    if (top.ppid <= 1) return isUnits(top);
    const parentStart = startOf(top.ppid);
    // A parent gone meanwhile: the top is being re-parented, an orphan.
    if (parentStart === undefined || createdAt === undefined) return isUnits(top);
    return parentStart < createdAt - 1 && isUnits(top);
  });
}
