/**
 * The job journal on disk: `<stateDir>/jobs.journal`, append-only JSON lines written
 * synchronously (so a `kill -9` loses nothing that was answered), compacted into one record per
 * job when it grows, so its size follows the table's, not its history.
 *
 * Nothing here throws: a failed write (a full disk, no descriptor left) is logged and leaves the
 * journal *behind* the table. While behind, nothing is appended — the file may end in a cut line,
 * and an entry glued onto it would lose both — and every later change, and a retry timer, try to
 * rewrite the whole journal from the table instead. The first rewrite that succeeds catches up
 * everything missed, so journaling resumes without a restart once space is free again.
 */
import { closeSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import type { Logger } from '../log/logger.js';
import {
  compactedEntries,
  replayJournal,
  type JournalEntry,
  type JournalReplay,
  type JournalState,
} from './journal-entries.js';

/** Entries appended before a compaction is considered at all. */
const COMPACT_MIN_ENTRIES = 1_000;
/** Compact once the appended entries outnumber the live records this many times. */
const COMPACT_RATIO = 4;
/** How often, at most, a journal that fell behind tries to catch up (a rewrite costs the whole table). */
const RETRY_MS = 1_000;

/** What loading a journal yields: the replay, and why the file could not be read, if it could not. */
export interface JournalLoad extends JournalReplay {
  readError?: string;
}

/** Reads and replays a journal; a missing file is an empty table, an unreadable one too (reported). */
export function loadJournal(path: string): JournalLoad {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const empty: JournalLoad = { nextNumber: 1, jobs: [], skipped: [] };
    return code === 'ENOENT' ? empty : { ...empty, readError: code ?? String(error) };
  }
  return replayJournal(text);
}

/** What the journal reads from the table it records. */
export interface JournalSource {
  /** The complete current state, for compaction. */
  state(): JournalState;
  /** How many jobs the table holds. */
  jobCount(): number;
}

/** The open journal of a running daemon. */
export class JobJournal {
  private fd: number | undefined;
  private appended = 0;
  private closed = false;
  /** True after a write failed: the file lags the table until a compaction succeeds. */
  private behind = false;
  private retryTimer: NodeJS.Timeout | undefined;
  /** When the last catch-up was tried (ms), so a burst of changes on a full disk tries once. */
  private lastAttemptAt = 0;

  constructor(
    readonly path: string,
    private readonly source: JournalSource,
    private readonly log?: Logger,
  ) {}

  /** True while the file lags the table (a write failed and no rewrite has succeeded since). */
  get isBehind(): boolean {
    return this.behind;
  }

  /**
   * Rewrites the journal from the current state (a temp file renamed over it) and keeps it open for
   * appends. False when it could not; the temp file is never left behind.
   */
  compact(): boolean {
    if (this.closed) return false;
    this.lastAttemptAt = Date.now();
    const tmp = `${this.path}.tmp`;
    try {
      const text = compactedEntries(this.source.state())
        .map((entry) => `${JSON.stringify(entry)}\n`)
        .join('');
      writeFileSync(tmp, text, { mode: 0o600 });
      renameSync(tmp, this.path);
    } catch (error) {
      try {
        rmSync(tmp, { force: true });
      } catch {
        // Nothing more to do: the next compaction writes it again from the start.
      }
      this.failed('compact', error);
      return false;
    }
    // The old descriptor names the replaced file: appends must go to the new one.
    this.closeFd();
    try {
      this.fd = openSync(this.path, 'a', 0o600);
    } catch (error) {
      this.failed('open', error);
      return false;
    }
    this.appended = 0;
    if (this.behind) this.log?.info('job journal written again');
    this.behind = false;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    return true;
  }

  /** Appends one entry (or catches up by compaction when behind); compacts when history outgrows the table. */
  append(entry: JournalEntry): void {
    if (this.closed) return;
    // The table already holds this entry's change, so a compaction records it too.
    if (this.behind) {
      if (Date.now() - this.lastAttemptAt >= RETRY_MS) this.compact();
      return;
    }
    // Not opened yet (a replay in progress): the compaction that opens it records the change.
    if (this.fd === undefined) return;
    const line = Buffer.from(`${JSON.stringify(entry)}\n`);
    let done = 0;
    try {
      while (done < line.length) done += writeSync(this.fd, line, done, line.length - done);
    } catch (error) {
      this.failed('append', error);
      return;
    }
    this.appended += 1;
    if (this.appended >= COMPACT_MIN_ENTRIES && this.appended >= COMPACT_RATIO * this.source.jobCount()) this.compact();
  }

  /** Writes the final compacted journal (best effort) and closes it; later appends are dropped. */
  close(): void {
    if (this.closed) return;
    this.compact();
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.closeFd();
  }

  private closeFd(): void {
    if (this.fd === undefined) return;
    try {
      closeSync(this.fd);
    } catch {
      // A close that fails leaves nothing to retry.
    }
    this.fd = undefined;
  }

  /** Records a failed write: logged once per outage, then retried by compaction until one succeeds. */
  private failed(operation: string, error: unknown): void {
    if (!this.behind) {
      const code = (error as NodeJS.ErrnoException).code ?? String(error);
      this.log?.warn({ operation, code }, 'job journal write failed; it is rewritten whole once writing works again');
    }
    this.behind = true;
    if (this.retryTimer !== undefined || this.closed) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      // A failed compaction calls back here and schedules the next try.
      if (this.behind) this.compact();
    }, RETRY_MS);
    this.retryTimer.unref();
  }
}
