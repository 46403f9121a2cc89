/** Process checks for tests: is a pid alive (zombies count as dead), what are its descendants. */
import { readdirSync, readFileSync } from 'node:fs';
import { readProcStat } from '../../daemon/executor/proc.js';

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
