/** Process checks for tests: is a pid alive (zombies count as dead), children, groups, open fds. */
import { readdirSync, readFileSync } from 'node:fs';
import { readProcStat, type ProcStat } from '../../shared/proc.js';

/** True when the process exists and is not a zombie. */
export function pidAlive(pid: number): boolean {
  const stat = readProcStat(pid);
  return stat !== undefined && stat.state !== 'Z' && stat.state !== 'X';
}

/** Live pids among `pids`. */
export function alivePids(pids: number[]): number[] {
  return pids.filter(pidAlive);
}

/** Parses every integer on its own line of a command's output (pids a command echoed). */
export function pidsIn(text: string): number[] {
  return text
    .split('\n')
    .filter((line) => /^\d+$/.test(line.trim()))
    .map(Number);
}

/** Live pids whose command line contains `token` (finds processes whose pids a sandbox hides). */
export function pidsWithArgument(token: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(token) && pidAlive(pid)) pids.push(pid);
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

/** Every process on the machine with its stat (zombies included). */
export function allProcStats(): ProcStat[] {
  const stats: ProcStat[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const stat = readProcStat(pid);
    if (stat) stats.push(stat);
  }
  return stats;
}

/** Direct children of `pid` (zombies included: an unreaped child is a leak). */
export function childrenOf(pid: number): ProcStat[] {
  return allProcStats().filter((stat) => stat.ppid === pid);
}

/** True for the daemon's spawner process (daemon/executor/spawn-worker.js). */
function isSpawnerProcess(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('spawn-worker.js');
  } catch {
    return false;
  }
}

/** The daemon's live spawner processes. */
export function spawnerProcesses(daemonPid: number): ProcStat[] {
  return childrenOf(daemonPid).filter((stat) => stat.state !== 'Z' && isSpawnerProcess(stat.pid));
}

/**
 * The processes a daemon started for runs and jobs that are still there (zombies included): its
 * own children and its spawner process's children — not the spawner process itself.
 */
export function commandChildrenOf(daemonPid: number): ProcStat[] {
  const direct = childrenOf(daemonPid);
  const spawners = direct.filter((stat) => isSpawnerProcess(stat.pid));
  return [...direct.filter((stat) => !spawners.includes(stat)), ...spawners.flatMap((stat) => childrenOf(stat.pid))];
}

/** Processes (zombies included) whose process group is one of `pgids`. */
export function membersOfGroups(pgids: Iterable<number>): ProcStat[] {
  const wanted = new Set(pgids);
  return allProcStats().filter((stat) => wanted.has(stat.pgrp));
}

/** Number of open file descriptors of a process. */
export function openFdCount(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}
