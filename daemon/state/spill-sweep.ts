/**
 * The retention sweep of spill and log files (docs/jobs.md): the one deleter besides `job/release`
 * and `session/close`. A path reported to a client stays valid until one of those removes it.
 *
 * Policy: a file that is still open for writing (its run or job is producing it) is never removed.
 * Every other file is removed once it is older than `spillRetentionMs` (age = time since its last
 * write, i.e. since its run or job settled). Then, while all files together hold more than
 * `spillQuotaBytes`, closed files are removed oldest first. If open files alone pass the quota,
 * new runs are refused with LIMIT_EXCEEDED until a later sweep finds room.
 *
 * Directories are left in place (a session's directory goes with `session/close`): removing one
 * could race a run that is about to create its file there.
 *
 * The sweep runs at start-up, every `SWEEP_INTERVAL_MS`, and `SWEEP_DEBOUNCE_MS` after a file is
 * opened or closed or a command is started (at most one sweep per such interval), so the quota
 * follows the disk within about a second without a directory scan per command.
 */
import { lstat, readdir, stat, unlink } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { OpenFiles } from '../../spill/spill-file.js';
import type { Logger } from '../log/logger.js';

/** Period of the background sweep. */
export const SWEEP_INTERVAL_MS = 60_000;

/** Quiet time between a file being opened or closed and the sweep that accounts for it. */
export const SWEEP_DEBOUNCE_MS = 1_000;

/** One file found under the spill directory. */
export interface SpillEntry {
  path: string;
  bytes: number;
  mtimeMs: number;
  /** Open for writing by a run or job that is still producing it. */
  open: boolean;
}

/** The limits a sweep applies. */
export interface SweepPolicy {
  now: number;
  spillRetentionMs: number;
  spillQuotaBytes: number;
}

/** What a sweep decided: the files to remove and the bytes that stay. */
export interface SweepPlan {
  remove: SpillEntry[];
  keptBytes: number;
  keptFiles: number;
}

/** Decides which files go: closed files past retention, then closed files oldest first past the quota. */
export function planSweep(entries: readonly SpillEntry[], policy: SweepPolicy): SweepPlan {
  const expired = (entry: SpillEntry) => !entry.open && policy.now - entry.mtimeMs > policy.spillRetentionMs;
  const remove = entries.filter(expired);
  const kept = entries.filter((entry) => !expired(entry));
  let keptBytes = kept.reduce((sum, entry) => sum + entry.bytes, 0);
  const removable = kept.filter((entry) => !entry.open).sort((a, b) => a.mtimeMs - b.mtimeMs);
  for (const entry of removable) {
    if (keptBytes <= policy.spillQuotaBytes) break;
    remove.push(entry);
    keptBytes -= entry.bytes;
  }
  return { remove, keptBytes, keptFiles: entries.length - remove.length };
}

/** Lists every file below `dir` with its size and age. */
async function listSpill(dir: string, openFiles: OpenFiles): Promise<SpillEntry[]> {
  let dirents;
  try {
    // A symlink swapped in for the spill root is never followed: the sweep would delete old files
    // wherever it points. (Below the root, recursive readdir does not enter symlinks.)
    if (!(await lstat(dir)).isDirectory()) return [];
    dirents = await readdir(dir, { recursive: true, withFileTypes: true });
  } catch {
    return [];
  }
  const entries: SpillEntry[] = [];
  for (const dirent of dirents) {
    if (!dirent.isFile()) continue;
    const path = resolve(join(dirent.parentPath, dirent.name));
    const info = await stat(path).catch(() => undefined);
    if (info) entries.push({ path, bytes: info.size, mtimeMs: info.mtimeMs, open: openFiles.has(path) });
  }
  return entries;
}

/** What the daemon needs from the sweeper. */
export interface SpillUsage {
  /** Bytes the last sweep left on disk. */
  readonly usedBytes: number;
  /** Asks for a sweep within `SWEEP_DEBOUNCE_MS` (files may have grown). */
  sweepSoon(): void;
}

/** Runs the sweep on a schedule and keeps the last measured usage. */
export class SpillSweeper implements SpillUsage {
  usedBytes = 0;
  private timer: NodeJS.Timeout | undefined;
  private pending: NodeJS.Timeout | undefined;
  private running: Promise<SweepPlan> | undefined;
  private again = false;
  private stopped = false;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly dir: string,
    private readonly openFiles: OpenFiles,
    private readonly policy: () => Omit<SweepPolicy, 'now'>,
    private readonly log: Logger,
  ) {
    this.unsubscribe = openFiles.onChange(() => this.sweepSoon());
  }

  /** Sweeps now and then every `SWEEP_INTERVAL_MS`; the timer never keeps the daemon alive. */
  start(): Promise<SweepPlan> {
    this.timer = setInterval(() => this.sweepInBackground(), SWEEP_INTERVAL_MS).unref();
    return this.sweep();
  }

  /** Stops every timer and listener. */
  stop(): void {
    this.stopped = true;
    this.unsubscribe();
    clearInterval(this.timer);
    clearTimeout(this.pending);
  }

  /** Sweeps once (a sweep asked for while one runs is run right after it). */
  sweep(): Promise<SweepPlan> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    // A sweep that fails keeps the last figures: every caller (timers included) gets a plan, never a rejection.
    const failed = (): SweepPlan => ({ remove: [], keptBytes: this.usedBytes, keptFiles: 0 });
    this.running = this.sweepOnce()
      .catch(failed)
      .finally(() => {
        this.running = undefined;
        if (this.again && !this.stopped) {
          this.again = false;
          this.sweepInBackground();
        }
      });
    return this.running;
  }

  /** Asks for a sweep within `SWEEP_DEBOUNCE_MS`; asks made meanwhile share it. */
  sweepSoon(): void {
    if (this.pending || this.stopped) return;
    this.pending = setTimeout(() => {
      this.pending = undefined;
      this.sweepInBackground();
    }, SWEEP_DEBOUNCE_MS).unref();
  }

  /** A sweep nobody awaits: its failure is logged, and the next one tries again. */
  private sweepInBackground(): void {
    this.sweep().catch((error: unknown) => this.log.warn({ err: error }, 'spill sweep failed'));
  }

  private async sweepOnce(): Promise<SweepPlan> {
    const entries = await listSpill(this.dir, this.openFiles);
    const plan = planSweep(entries, { ...this.policy(), now: Date.now() });
    for (const entry of plan.remove) {
      // A file opened meanwhile belongs to a new run: leave it.
      if (this.openFiles.has(entry.path)) continue;
      await unlink(entry.path).catch(() => undefined);
    }
    this.usedBytes = plan.keptBytes;
    if (plan.remove.length > 0) {
      this.log.info(
        { removedFiles: plan.remove.length, keptFiles: plan.keptFiles, keptBytes: plan.keptBytes },
        'spill sweep',
      );
    }
    return plan;
  }
}
