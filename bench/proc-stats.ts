/** Resident memory and CPU time of a process, from Linux's /proc (the bench runs on Linux). */
import { readFileSync, writeFileSync } from 'node:fs';

/** Clock ticks per second of `/proc/<pid>/stat` times (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** `VmRSS` and `VmHWM` (peak) of a process, in bytes; NaN when unreadable. */
export function readMemory(pid: number): { rss: number; peak: number } {
  let text = '';
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return { rss: Number.NaN, peak: Number.NaN };
  }
  const kib = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? Number.NaN) * 1024;
  return { rss: kib('VmRSS'), peak: kib('VmHWM') };
}

/** Resets the process's peak RSS to its current RSS (`clear_refs` 5); false when not allowed. */
export function resetPeakMemory(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** User + system CPU time of a process so far, in milliseconds; NaN when unreadable. */
export function readCpuMs(pid: number): number {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return Number.NaN;
  }
}

/** Samples VmRSS every `intervalMs` until stopped; returns the largest sample, in bytes. */
export function sampleRss(pid: number, intervalMs = 10): { stop: () => number } {
  let max = readMemory(pid).rss;
  const timer = setInterval(() => {
    const { rss } = readMemory(pid);
    if (rss > max) max = rss;
  }, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(max, readMemory(pid).rss);
    },
  };
}
