/**
 * What Linux's /proc says about the processes on a terminal: the terminal's foreground group, the
 * processes of its session, and their descendants. Reads only; undefined or empty when /proc
 * cannot tell (another platform, a process gone meanwhile).
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** The fields of `/proc/<pid>/stat` a terminal needs. */
export interface TtyStat {
  pid: number;
  state: string;
  ppid: number;
  pgrp: number;
  session: number;
  /** Device number of the controlling terminal (0: none). */
  ttyNr: number;
  /** Foreground process group of the controlling terminal (-1: none). */
  tpgid: number;
  startTime: number;
  comm: string;
}

/** The current directory of `pid` (after its `cd`s); undefined when /proc cannot tell. */
export function readProcCwd(pid: number): string | undefined {
  try {
    const cwd = readlinkSync(`/proc/${pid}/cwd`);
    // A removed directory reads `/path (deleted)`; outside the reader's root it does not start with /.
    return cwd.startsWith('/') && !cwd.endsWith(' (deleted)') ? cwd : undefined;
  } catch {
    return undefined;
  }
}

/** Parses `/proc/<pid>/stat` (or `/proc/<pid>/task/<tid>/stat`); undefined when it is gone. */
export function readTtyStat(pid: number, path = `/proc/${pid}/stat`): TtyStat | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'latin1');
  } catch {
    return undefined;
  }
  const close = text.lastIndexOf(')');
  const fields = text.slice(close + 2).split(' ');
  return {
    pid,
    comm: text.slice(text.indexOf('(') + 1, close),
    state: fields[0]!,
    ppid: Number(fields[1]),
    pgrp: Number(fields[2]),
    session: Number(fields[3]),
    ttyNr: Number(fields[4]),
    tpgid: Number(fields[5]),
    startTime: Number(fields[19]),
  };
}

/** True for a process that runs (not a zombie). */
export function isLiveState(state: string): boolean {
  return state !== 'Z' && state !== 'X';
}

/**
 * Every live process of session `sid` (a full /proc scan). A terminal's processes are exactly its
 * program's session: a process that leaves it (setsid) loses the terminal as controlling tty, and
 * no other session can take the tty while this one holds it, so `tty_nr` adds no process.
 */
export function processesInSession(sid: number): TtyStat[] {
  const found: TtyStat[] = [];
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return found;
  }
  for (const name of names) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    const stat = readTtyStat(pid);
    if (stat && isLiveState(stat.state) && stat.session === sid) found.push(stat);
  }
  return found;
}

/** Pids of the direct children of every thread of `pid`. */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return children;
  }
  for (const tid of tasks) {
    try {
      const text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'latin1').trim();
      if (text) for (const child of text.split(' ')) children.push(Number(child));
    } catch {
      // Thread gone meanwhile.
    }
  }
  return children;
}

/** `root` and all its descendants (walks `/proc/<pid>/task/<tid>/children`, ~0.5 ms; no full scan). */
export function descendants(root: number): number[] {
  const seen: number[] = [];
  const queue = [root];
  while (queue.length > 0 && seen.length < 10_000) {
    const pid = queue.shift()!;
    seen.push(pid);
    queue.push(...childrenOf(pid));
  }
  return seen;
}

/** The thread ids of a process (just the pid when its tasks cannot be listed). */
export function threadsOf(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).map(Number);
  } catch {
    return [pid];
  }
}
