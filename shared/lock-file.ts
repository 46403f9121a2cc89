/**
 * Exclusive lock files that name their holder (pid and, on Linux, its /proc start time), so that a
 * lock left behind by a dead process is recognised as stale and broken, and a reused pid is never
 * taken for the holder.
 *
 * Taking a lock is one atomic `link()` of a fully written temp file: a reader never sees a
 * half-written lock. Breaking a stale lock happens under a short-lived "breaker" lock and only
 * after re-reading that the file still names the same dead holder, so a fresh lock taken by
 * someone else in the meantime is never removed.
 */
import { randomBytes } from 'node:crypto';
import { linkSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { HAS_PROC, readProcStat } from './proc.js';

/** Who holds a lock. */
export interface LockHolder {
  pid: number;
  /** /proc start time in clock ticks; with the pid, identifies the process across pid reuse. */
  startTime?: number;
}

/** The outcome of `tryLock`. */
export type LockAttempt = { acquired: true; release: () => void } | { acquired: false; holder: LockHolder };

/** A breaker lock older than this belongs to a process that died in the middle of a break. */
const BREAKER_STALE_MS = 2_000;
/** Attempts before giving up against a lock that keeps changing hands. */
const MAX_ATTEMPTS = 5;

/** The identity of a running process. */
export function holderOf(pid: number): LockHolder {
  const startTime = HAS_PROC ? readProcStat(pid)?.startTime : undefined;
  return startTime === undefined ? { pid } : { pid, startTime };
}

/** True when the process named by `holder` still runs (a zombie or a reused pid does not count). */
export function holderAlive(holder: LockHolder): boolean {
  if (!Number.isInteger(holder.pid) || holder.pid <= 0) return false;
  if (HAS_PROC) {
    const stat = readProcStat(holder.pid);
    if (!stat || stat.state === 'Z' || stat.state === 'X') return false;
    return holder.startTime === undefined || stat.startTime === holder.startTime;
  }
  try {
    process.kill(holder.pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Reads the holder named in a lock file; undefined when there is no lock file. */
export function readHolder(path: string): LockHolder | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  try {
    const parsed = JSON.parse(text) as Partial<LockHolder>;
    return typeof parsed.pid === 'number' ? { pid: parsed.pid, startTime: parsed.startTime } : { pid: 0 };
  } catch {
    // Not written by execd (locks are linked whole): nobody alive holds it.
    return { pid: 0 };
  }
}

/** The live holder of a lock, if any. */
export function liveHolder(path: string): LockHolder | undefined {
  const holder = readHolder(path);
  return holder && holderAlive(holder) ? holder : undefined;
}

function sameHolder(a: LockHolder, b: LockHolder): boolean {
  return a.pid === b.pid && a.startTime === b.startTime;
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Already gone.
  }
}

/** Removes the lock at `path` if it still names `stale`, under the breaker lock. */
function breakStale(path: string, stale: LockHolder): void {
  const breaker = `${path}.break`;
  try {
    writeFileSync(breaker, String(process.pid), { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    // Someone else is breaking it right now; only a breaker that died mid-break leaves this behind.
    const age = Date.now() - (statSafe(breaker)?.mtimeMs ?? Date.now());
    if (age > BREAKER_STALE_MS) unlinkQuietly(breaker);
    return;
  }
  try {
    const current = readHolder(path);
    if (current && sameHolder(current, stale)) unlinkQuietly(path);
  } finally {
    unlinkQuietly(breaker);
  }
}

function statSafe(path: string) {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

/**
 * Tries to take the lock at `path` for this process without waiting. A stale lock (its holder is
 * dead) is broken and taken; a live holder is reported.
 */
export function tryLock(path: string): LockAttempt {
  const me = holderOf(process.pid);
  const temp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(temp, JSON.stringify(me), { mode: 0o600 });
  try {
    let holder: LockHolder | undefined;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      try {
        linkSync(temp, path);
        return { acquired: true, release: () => releaseLock(path, me) };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      holder = readHolder(path);
      if (holder === undefined) continue; // Released in between: try again.
      if (holderAlive(holder)) return { acquired: false, holder };
      breakStale(path, holder);
    }
    return { acquired: false, holder: holder ?? { pid: 0 } };
  } finally {
    unlinkQuietly(temp);
  }
}

/** Removes the lock at `path` if `holder` still holds it. */
function releaseLock(path: string, holder: LockHolder): void {
  const current = readHolder(path);
  if (current && sameHolder(current, holder)) unlinkQuietly(path);
}
