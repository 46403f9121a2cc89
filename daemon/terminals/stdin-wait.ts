/**
 * The `stdin_read` readiness tier (docs/terminals.md): is a process of the terminal's foreground group
 * blocked reading or polling this terminal? Read from /proc without native code: the blocked
 * syscall of each thread and the device of the fd it waits on. The fd counts when its device is
 * the PTY's slave, or when it is `/dev/tty` of a process whose controlling terminal is this PTY;
 * a pipe never counts (`sleep 30 | cat` is not waiting for input).
 */
import { closeSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { descendants, readTtyStat, threadsOf } from './tty-proc.js';

/** Syscall numbers by architecture. */
const SYSCALLS: Record<string, { read: number[]; select: number[]; poll: number[]; epoll: number[] }> = {
  x64: { read: [0, 17, 19, 295], select: [23, 270], poll: [7, 271], epoll: [232, 281, 441] },
  arm64: { read: [63, 65, 67, 69], select: [72], poll: [73], epoll: [22, 441] },
};

/** Device number of `/dev/tty` (major 5, minor 0). */
const DEV_TTY = (5 << 8) | 0;

/** One thread blocked waiting on this terminal, identified so that a later wait can be told apart. */
export interface TerminalWait {
  tid: number;
  /** Context switches of the thread: a different count is a different wait. */
  switches: number;
}

/** `voluntary + nonvoluntary` context switches of a thread, or -1. */
function contextSwitches(pid: number, tid: number): number {
  try {
    const text = readFileSync(`/proc/${pid}/task/${tid}/status`, 'latin1');
    const voluntary = /voluntary_ctxt_switches:\s+(\d+)/.exec(text);
    const involuntary = /nonvoluntary_ctxt_switches:\s+(\d+)/.exec(text);
    return Number(voluntary?.[1] ?? 0) + Number(involuntary?.[1] ?? 0);
  } catch {
    return -1;
  }
}

/** Whether fd `fd` of `pid` is this terminal: its slave, or `/dev/tty` with this terminal as controlling tty. */
function fdIsTerminal(pid: number, fd: number, slaveDev: number, ttyNr: number): boolean {
  try {
    const info = statSync(`/proc/${pid}/fd/${fd}`);
    if (!info.isCharacterDevice()) return false;
    if (info.rdev === slaveDev) return true;
    return info.rdev === DEV_TTY && ttyNr === slaveDev;
  } catch {
    return false;
  }
}

/** Reads `length` bytes of a process's memory at `address` (needs ptrace access; else undefined). */
function readMemory(pid: number, address: number, length: number): Buffer | undefined {
  if (length <= 0 || length > 64 * 1024) return undefined;
  let fd: number | undefined;
  try {
    fd = openSync(`/proc/${pid}/mem`, 'r');
    const buf = Buffer.alloc(length);
    return readSync(fd, buf, 0, length, address) === length ? buf : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The fds a blocked select/pselect6 waits to read: its read set, else every fd below `nfds`. */
function selectFds(pid: number, nfds: number, readSet: number): number[] {
  const bounded = Math.min(nfds, 1024);
  const bits = readSet ? readMemory(pid, readSet, Math.ceil(bounded / 64) * 8) : undefined;
  const fds: number[] = [];
  for (let fd = 0; fd < bounded; fd++) {
    if (!bits || (bits[fd >> 3]! & (1 << (fd & 7))) !== 0) fds.push(fd);
  }
  return fds;
}

/** The fds a blocked poll/ppoll waits on: its pollfd array, else fd 0. */
function pollFds(pid: number, address: number, nfds: number): number[] {
  const array = readMemory(pid, address, Math.min(nfds, 1024) * 8);
  if (!array) return [0];
  const fds: number[] = [];
  for (let i = 0; i + 8 <= array.length; i += 8) {
    const events = array.readInt16LE(i + 4);
    // POLLIN | POLLPRI | POLLRDNORM: a wait to read.
    if ((events & 0x43) !== 0) fds.push(array.readInt32LE(i));
  }
  return fds;
}

/** The fds an epoll set watches (`tfd:` lines of its fdinfo). */
function epollFds(pid: number, epfd: number): number[] {
  try {
    const text = readFileSync(`/proc/${pid}/fdinfo/${epfd}`, 'latin1');
    return [...text.matchAll(/^tfd:\s+(\d+)/gm)].map((match) => Number(match[1]));
  } catch {
    return [];
  }
}

/** The fds a thread's blocked syscall waits on; empty when it is running or waits on something else. */
function waitedFds(pid: number, tid: number): number[] {
  const table = SYSCALLS[process.arch];
  if (!table) return [];
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/task/${tid}/syscall`, 'latin1').trim();
  } catch {
    return [];
  }
  const fields = text.split(' ');
  const nr = Number(fields[0]);
  if (!Number.isInteger(nr) || nr < 0) return [];
  const arg = (i: number) => Number.parseInt(fields[i + 1] ?? '0', 16);
  if (table.read.includes(nr)) return [arg(0)];
  if (table.select.includes(nr)) return selectFds(pid, arg(0), arg(1));
  if (table.poll.includes(nr)) return pollFds(pid, arg(0), arg(1));
  if (table.epoll.includes(nr)) return epollFds(pid, arg(0));
  return [];
}

/**
 * The threads of the terminal's foreground group that are blocked reading this terminal now.
 * `root` is the terminal's program; `slaveDev` the PTY slave's device number.
 */
export function terminalWaits(root: number, slaveDev: number): TerminalWait[] {
  const leader = readTtyStat(root);
  if (!leader || leader.tpgid <= 0) return [];
  const waits: TerminalWait[] = [];
  for (const pid of descendants(root)) {
    const stat = pid === root ? leader : readTtyStat(pid);
    if (!stat || stat.pgrp !== leader.tpgid || stat.state === 'T' || stat.state === 'Z') continue;
    for (const tid of threadsOf(pid)) {
      const fds = waitedFds(pid, tid);
      if (fds.some((fd) => fdIsTerminal(pid, fd, slaveDev, stat.ttyNr))) {
        waits.push({ tid, switches: contextSwitches(pid, tid) });
      }
    }
  }
  return waits;
}

/**
 * Decides the `stdin_read` tier over successive polls: a wait counts once the same wait (same
 * thread, same context-switch count) is seen on two polls in a row, and a wait that was already
 * in place before the write never counts until it was seen to end.
 */
export class StdinWaitDetector {
  private readonly stale: Map<number, number>;
  private previous = new Map<number, number>();

  /** `before`: the waits in place just before the write. */
  constructor(before: TerminalWait[]) {
    this.stale = new Map(before.map((wait) => [wait.tid, wait.switches]));
  }

  /** Feeds one poll; true when a fresh wait was seen on this poll and the one before. */
  poll(waits: TerminalWait[]): boolean {
    const current = new Map<number, number>();
    for (const wait of waits) {
      if (this.stale.get(wait.tid) === wait.switches) continue;
      this.stale.delete(wait.tid);
      current.set(wait.tid, wait.switches);
    }
    const seenTwice = [...current].some(([tid, switches]) => this.previous.get(tid) === switches);
    this.previous = current;
    return seenTwice;
  }
}
