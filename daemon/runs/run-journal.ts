/**
 * The run journal, `<stateDir>/runs.journal`: JSON lines appended synchronously as foreground runs
 * start and end, so that the next daemon on the state dir, after a crash (`kill -9`), finds the
 * runs that had no one left to answer them and ends them, as it ends the crashed daemon's jobs.
 * A run is its process group (the pid of its leader, which leads it) with the leader's /proc start
 * time: a group is killed only while its leader is that process, or is gone (Linux does not reuse
 * a pid while a group carries its number); never a pid ≤ 1.
 */
import { closeSync, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';
import { HAS_PROC, readProcStat } from '../../shared/proc.js';
import { terminateGroup } from '../processes/terminate.js';
import { groupStillOurs } from '../jobs/recovery.js';
import type { Logger } from '../log/logger.js';
import type { ProcessRegistry } from '../processes/process-registry.js';

/** A run the journal says was started and not ended. */
export interface RunRecord {
  pgid: number;
  sessionId: string;
  procStartTime?: number;
}

/** A journal line. */
type RunEntry = { op: 'start'; pgid: number; sessionId: string; procStartTime?: number } | { op: 'end'; pgid: number };

/** Appends after which the journal is emptied, at a moment when no run is live. */
const TRUNCATE_AFTER_ENTRIES = 1_000;

/** A JSON line as a run entry; undefined for a torn or foreign line. */
function parseEntry(line: string): RunEntry | undefined {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const entry = value as Record<string, unknown>;
  if (!Number.isSafeInteger(entry.pgid)) return undefined;
  const pgid = entry.pgid as number;
  if (entry.op === 'end') return { op: 'end', pgid };
  if (entry.op !== 'start' || typeof entry.sessionId !== 'string') return undefined;
  const procStartTime = typeof entry.procStartTime === 'number' ? entry.procStartTime : undefined;
  return { op: 'start', pgid, sessionId: entry.sessionId, ...(procStartTime !== undefined && { procStartTime }) };
}

/** The runs `text` leaves started and not ended. Pure; a bad line is skipped. */
export function replayRunJournal(text: string): RunRecord[] {
  const live = new Map<number, RunRecord>();
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const entry = parseEntry(line);
    if (entry?.op === 'start') {
      const { pgid, sessionId, procStartTime } = entry;
      live.set(pgid, { pgid, sessionId, ...(procStartTime !== undefined && { procStartTime }) });
    } else if (entry) live.delete(entry.pgid);
  }
  return [...live.values()];
}

/** The open run journal of a running daemon. */
export class RunJournal {
  private fd: number | undefined;
  private appended = 0;
  private readonly live = new Set<number>();

  constructor(readonly path: string) {}

  /**
   * Reads the runs a previous daemon left started (a missing file: none), empties the journal and
   * keeps it open for appends.
   */
  open(): RunRecord[] {
    let left: RunRecord[] = [];
    try {
      left = replayRunJournal(readFileSync(this.path, 'utf8'));
    } catch {
      // No journal yet.
    }
    try {
      this.fd = openSync(this.path, 'w', 0o600);
    } catch {
      // A state dir that cannot take the file (full, read-only): runs go unrecorded, as below.
    }
    return left;
  }

  /** Records a run's group as started (its leader's start time read now). */
  started(pgid: number, sessionId: string): void {
    const procStartTime = HAS_PROC ? readProcStat(pgid)?.startTime : undefined;
    this.live.add(pgid);
    this.append({ op: 'start', pgid, sessionId, ...(procStartTime !== undefined && { procStartTime }) });
  }

  /** Records a run's group as ended (dead, or killed by this daemon). */
  ended(pgid: number): void {
    if (!this.live.delete(pgid)) return;
    this.append({ op: 'end', pgid });
    if (this.live.size === 0 && this.appended >= TRUNCATE_AFTER_ENTRIES && this.fd !== undefined) {
      // Nothing live: the history says nothing a next daemon needs.
      try {
        ftruncateSync(this.fd, 0);
        this.appended = 0;
      } catch {
        // Kept as it is; the next quiet moment tries again.
      }
    }
  }

  private append(entry: RunEntry): void {
    if (this.fd === undefined) return;
    const line = Buffer.from(`${JSON.stringify(entry)}\n`);
    try {
      let done = 0;
      while (done < line.length) done += writeSync(this.fd, line, done, line.length - done);
    } catch {
      // A full disk never fails a run: it goes unrecorded (after a crash it would be left running,
      // as every run was before this journal), and a torn line is skipped by the replay.
    }
    this.appended += 1;
  }

  /** Closes the journal (a later start or end is not recorded). */
  close(): void {
    if (this.fd === undefined) return;
    closeSync(this.fd);
    this.fd = undefined;
  }
}

/**
 * Kills, in the background, the groups of the runs a crashed daemon left running (they have no
 * one to answer). Each is tracked as a leftover of its session meanwhile. Returns how many.
 */
export function killOrphanedRuns(runs: RunRecord[], processes: ProcessRegistry, graceMs: number, log: Logger): number {
  // Without /proc nothing proves a pid is still the run's: leave it alone.
  if (!HAS_PROC) return 0;
  let doomed = 0;
  for (const run of runs) {
    if (run.pgid <= 1 || run.pgid === process.pid) continue;
    if (!groupStillOurs(run.procStartTime, readProcStat(run.pgid))) continue;
    doomed += 1;
    const group = processes.track({ pgid: run.pgid, sessionId: run.sessionId, kind: 'leftover' });
    terminateGroup(run.pgid, graceMs)
      .catch((error: unknown) => log.error({ pgid: run.pgid, err: error }, 'killing an orphaned run failed'))
      .finally(() => processes.untrack(group));
  }
  return doomed;
}
