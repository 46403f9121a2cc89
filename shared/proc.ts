/**
 * Process facts from Linux's /proc. A killed orphan stays a zombie until whoever adopted it reaps
 * it (on some machines that takes seconds), so "the group is gone" means "no member that is not a
 * zombie": a zombie runs nothing, holds no pipe and writes no file.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { PLATFORM } from '../protocol/platform.js';

/** The fields of `/proc/<pid>/stat` execd needs. */
export interface ProcStat {
  pid: number;
  state: string;
  ppid: number;
  pgrp: number;
  /** The session (`setsid`) the process is in. */
  session: number;
  /** Start time in clock ticks after boot: with the pid, identifies a process across pid reuse. */
  startTime: number;
  /**
   * Size of the process's initial environment in bytes (`env_end - env_start`); 0 where the kernel
   * hides it (a process the reader may not trace, whose environ it cannot read either).
   */
  environBytes?: number;
}

/** Parses the text of `/proc/<pid>/stat`. */
export function parseProcStat(pid: number, text: string): ProcStat {
  // comm may hold spaces and parentheses: the fields after it start past the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return {
    pid,
    state: fields[0]!,
    ppid: Number(fields[1]),
    pgrp: Number(fields[2]),
    session: Number(fields[3]),
    startTime: Number(fields[19]),
    environBytes: Math.max(0, Number(fields[48] ?? 0) - Number(fields[47] ?? 0)) || 0,
  };
}

/** Parses `/proc/<pid>/stat`; undefined when the process does not exist. */
export function readProcStat(pid: number): ProcStat | undefined {
  try {
    return parseProcStat(pid, readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** The real uid of process `pid` (`/proc/<pid>/status`); undefined when it does not exist. */
export function readProcUid(pid: number): number | undefined {
  try {
    const match = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** True for a process that exists and is not a zombie. */
function isLive(stat: ProcStat | undefined): stat is ProcStat {
  return stat !== undefined && stat.state !== 'Z' && stat.state !== 'X';
}

/** Pids of the members of a process group that are not zombies (a scan of all of /proc). */
export function liveGroupMembers(pgid: number): number[] {
  const members: number[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const stat = readProcStat(pid);
    if (isLive(stat) && stat.pgrp === pgid) members.push(pid);
  }
  return members;
}

/**
 * One live member per group, as last found: checking it again costs one read of its stat, where
 * finding a member costs a scan of every process on the machine. Entries go with their group.
 */
const memberHints = new Map<number, number>();

/**
 * Whether group `pgid` has a live member. Incremental: the member found last time is checked
 * first, and /proc is scanned only when it is gone, so a group with a long-lived member (a
 * leftover `sleep 600 &`) costs one small read per check.
 */
export function groupHasLiveMember(pgid: number): boolean {
  const hint = memberHints.get(pgid) ?? pgid;
  const known = readProcStat(hint);
  if (isLive(known) && known.pgrp === pgid) {
    memberHints.set(pgid, hint);
    return true;
  }
  const [member] = liveGroupMembers(pgid);
  if (member === undefined) memberHints.delete(pgid);
  else memberHints.set(pgid, member);
  return member !== undefined;
}

/** Forgets what is known of a group that is gone. */
export function forgetGroup(pgid: number): void {
  memberHints.delete(pgid);
}

/** A file identity: device and inode, as `fstat` reports them. */
export interface FileId {
  dev: number;
  ino: number;
}

/**
 * Whether process `pid` has one of `files` open (any descriptor of it leads there; a deleted file
 * still counts). False when the process is gone. Costs a read of its descriptor table and a stat
 * per descriptor: microseconds for a shell or a `sleep`.
 */
export function holdsAnyFile(pid: number, files: readonly FileId[]): boolean {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  for (const fd of fds) {
    try {
      const target = statSync(`/proc/${pid}/fd/${fd}`);
      if (files.some((file) => file.dev === target.dev && file.ino === target.ino)) return true;
    } catch {
      // Closed meanwhile.
    }
  }
  return false;
}

/** Whether /proc can answer for this platform. */
export const HAS_PROC = PLATFORM.hasProc;

/** What one process of the daemon's occupies, from `/proc/<pid>/smaps_rollup`, in bytes. */
export interface MemoryUse {
  pid: number;
  /** Resident set size: every page it maps that is in memory. */
  rssBytes: number;
  /** Proportional set size: pages shared with other processes (the Node binary) counted by share. */
  pssBytes: number;
}

/** The memory of `pid`; undefined without /proc or once the process is gone. */
export function readMemoryUse(pid: number): MemoryUse | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
    return { pid, rssBytes: kib('Rss'), pssBytes: kib('Pss') };
  } catch {
    return undefined;
  }
}
