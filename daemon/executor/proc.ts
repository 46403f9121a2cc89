/**
 * Process facts from Linux's /proc. A killed orphan stays a zombie until whoever adopted it reaps
 * it (on some machines that takes seconds), so "the group is gone" means "no member that is not a
 * zombie": a zombie runs nothing, holds no pipe and writes no file.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { PLATFORM } from '../../protocol/platform.js';

/** The fields of `/proc/<pid>/stat` execd needs. */
export interface ProcStat {
  pid: number;
  state: string;
  ppid: number;
  pgrp: number;
  /** Start time in clock ticks after boot: with the pid, identifies a process across pid reuse. */
  startTime: number;
}

/** Parses `/proc/<pid>/stat`; undefined when the process does not exist. */
export function readProcStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // comm may hold spaces and parentheses: the fields after it start past the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return {
    pid,
    state: fields[0]!,
    ppid: Number(fields[1]),
    pgrp: Number(fields[2]),
    startTime: Number(fields[19]),
  };
}

/** Pids of the members of a process group that are not zombies. */
export function liveGroupMembers(pgid: number): number[] {
  const members: number[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const stat = readProcStat(pid);
    if (stat && stat.pgrp === pgid && stat.state !== 'Z' && stat.state !== 'X') members.push(pid);
  }
  return members;
}

/** Whether /proc can answer for this platform. */
export const HAS_PROC = PLATFORM.hasProc;
