/**
 * The job journal on disk: `<stateDir>/jobs.journal`, append-only JSON lines written
 * synchronously (so a `kill -9` loses nothing that was answered), compacted into one record per
 * job when it grows, so its size follows the table's, not its history.
 */
import { closeSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { compactedEntries, replayJournal, type JournalEntry, type JournalState } from './journal-entries.js';

/** Entries appended before a compaction is considered at all. */
const COMPACT_MIN_ENTRIES = 1_000;
/** Compact once the appended entries outnumber the live records this many times. */
const COMPACT_RATIO = 4;

/** Reads and replays a journal; a missing file is an empty table. */
export function loadJournal(path: string): JournalState {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return { nextNumber: 1, jobs: [] };
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

  constructor(
    readonly path: string,
    private readonly source: JournalSource,
  ) {}

  /** Rewrites the journal from the current state and keeps it open for appends. */
  compact(): void {
    const text = compactedEntries(this.source.state())
      .map((entry) => `${JSON.stringify(entry)}\n`)
      .join('');
    const tmp = `${this.path}.tmp`;
    try {
      writeFileSync(tmp, text, { mode: 0o600 });
      renameSync(tmp, this.path);
    } catch (error) {
      // A full disk: no partial temp file stays behind; the journal itself is untouched.
      rmSync(tmp, { force: true });
      throw error;
    }
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = openSync(this.path, 'a', 0o600);
    this.appended = 0;
  }

  /** Appends one entry; compacts when the history has grown well past the table. */
  append(entry: JournalEntry): void {
    if (this.fd === undefined) return;
    const line = Buffer.from(`${JSON.stringify(entry)}\n`);
    let done = 0;
    while (done < line.length) done += writeSync(this.fd, line, done, line.length - done);
    this.appended += 1;
    if (this.appended >= COMPACT_MIN_ENTRIES && this.appended >= COMPACT_RATIO * this.source.jobCount()) this.compact();
  }

  /** Writes the final compacted journal and closes it; later appends are dropped. */
  close(): void {
    if (this.fd === undefined) return;
    this.compact();
    closeSync(this.fd);
    this.fd = undefined;
  }
}
