/** Process checks for tests: is a pid alive (zombies count as dead), what are its descendants. */
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
