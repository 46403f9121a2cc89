/**
 * The `EXECD_SCOPE` marker every command carries, and reading it back from `/proc/<pid>/environ`.
 * With the `environ` scope it is how a unit's processes are found at all; with a cgroup it is what
 * ties an orphan in a unit's cgroup (one whose parent chain no longer leads to what the daemon
 * started) to that unit. Each process is read once: the environment a process started with never
 * changes, so what was found is kept by pid, start time and environment size.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { readProcStat } from '../../shared/proc.js';

/** The environment variable that marks a command's processes. */
export const SCOPE_ENV = 'EXECD_SCOPE';

/**
 * How much of a process's environment the marker scan reads: this many bytes from its start and as
 * many from its end. The marker is a variable the daemon adds; a shell may move it (bash puts it
 * last), so both ends are read. A process whose environment is larger than twice this and whose
 * marker lies in neither end is not found, like one that cleared its environment (docs/reliability.md).
 */
export const ENVIRON_READ_CAP = 64 * 1024;

const SCOPE_KEY = Buffer.from(`${SCOPE_ENV}=`);

/** The markers found in processes, by pid, each valid for one start time and environment size. */
export class MarkerCache {
  private readonly found = new Map<number, { startTime: number; environBytes: number; value: string | undefined }>();

  /**
   * The marker of process `pid`; undefined when it has none or is gone. `spawners`: the daemon and
   * its spawner processes — between its fork and its exec a command still shows its spawner's
   * environment, without the marker, and that absence is not remembered.
   */
  of(pid: number, spawners: ReadonlySet<number>): string | undefined {
    const stat = readProcStat(pid);
    if (!stat) return undefined;
    const environBytes = stat.environBytes ?? 0;
    const cached = this.found.get(pid);
    if (cached && cached.startTime === stat.startTime && cached.environBytes === environBytes) return cached.value;
    const value = readScopeVariable(pid, environBytes);
    if (value !== undefined || !spawners.has(stat.ppid))
      this.found.set(pid, { startTime: stat.startTime, environBytes, value });
    return value;
  }

  /** Forgets the processes not in `live` (after a scan of every process). */
  keepOnly(live: ReadonlySet<number>): void {
    for (const pid of this.found.keys()) if (!live.has(pid)) this.found.delete(pid);
  }

  /** Forgets the processes that are gone (after a look at a few). */
  prune(): void {
    for (const [pid, entry] of this.found) if (readProcStat(pid)?.startTime !== entry.startTime) this.found.delete(pid);
  }
}

/**
 * The value of `EXECD_SCOPE` in a process's environment; undefined when unset or unreadable. At
 * most `2 * ENVIRON_READ_CAP` bytes are read, whatever the environment's size.
 */
function readScopeVariable(pid: number, environBytes: number): string | undefined {
  let fd: number;
  try {
    fd = openSync(`/proc/${pid}/environ`, 'r');
  } catch {
    return undefined;
  }
  try {
    // Where the size is hidden, the environment is read up to the cap from its start only.
    const whole = environBytes > 0 && environBytes <= 2 * ENVIRON_READ_CAP;
    const head = readAt(fd, 0, whole ? environBytes : ENVIRON_READ_CAP);
    const found = scopeValueIn(head, true, !whole && head.length === ENVIRON_READ_CAP);
    if (found !== undefined || whole || environBytes <= ENVIRON_READ_CAP) return found;
    const tail = readAt(fd, environBytes - ENVIRON_READ_CAP, ENVIRON_READ_CAP);
    return scopeValueIn(tail, false, false);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

function readAt(fd: number, position: number, length: number): Buffer {
  const buffer = Buffer.allocUnsafe(length);
  let filled = 0;
  while (filled < length) {
    const read = readSync(fd, buffer, filled, length - filled, position + filled);
    if (read === 0) break;
    filled += read;
  }
  return buffer.subarray(0, filled);
}

/**
 * The marker's value in a slice of an environment. `atStart`: the slice begins a variable (else
 * its first, partial one is skipped); `cut`: the slice ends mid-variable (a match running into its
 * end is incomplete, so not trusted).
 */
function scopeValueIn(slice: Buffer, atStart: boolean, cut: boolean): string | undefined {
  let start = slice.indexOf(SCOPE_KEY);
  // A match must start a variable: at 0 (when the slice begins one) or right after a NUL.
  while (start >= 0 && !(start === 0 ? atStart : slice[start - 1] === 0)) start = slice.indexOf(SCOPE_KEY, start + 1);
  if (start < 0) return undefined;
  const end = slice.indexOf(0, start);
  if (end < 0 && cut) return undefined;
  return slice.subarray(start + SCOPE_KEY.length, end < 0 ? slice.length : end).toString();
}
