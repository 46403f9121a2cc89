/**
 * The terminal journal, `<stateDir>/terminals.journal`: JSON lines appended synchronously as
 * terminals open, exit and are forgotten, so a restarted daemon continues the ids (`term-<n>` is
 * never reused) and finds terminals a crash left open. Rewritten compactly at each start.
 */
import { closeSync, openSync, readFileSync, renameSync, writeFileSync, writeSync } from 'node:fs';
import { lazySchema } from '../../protocol/zod.js';

/** One journaled terminal. */
export interface TerminalRecord {
  id: string;
  n: number;
  sessionId: string;
  name?: string;
  argv: string[];
  cwd: string;
  pid: number;
  procStartTime?: number;
  cols: number;
  rows: number;
  startedAt: string;
  exit?: { exitCode: number | null; signal: string | null; detail?: string; exitedAt: string };
}

/** A journal line. */
export type TerminalJournalEntry =
  | { op: 'open'; record: TerminalRecord }
  | { op: 'exit'; id: string; exit: NonNullable<TerminalRecord['exit']> }
  | { op: 'forget'; id: string }
  | { op: 'next'; n: number };

/** The state a journal replays to. */
export interface TerminalJournalState {
  nextNumber: number;
  records: TerminalRecord[];
}

/** The schema of one journal line (built on first use). */
const entrySchema = lazySchema((z) => {
  const count = z.number().int().nonnegative();
  const isoDate = z.string().refine((text) => !Number.isNaN(Date.parse(text)));
  const id = z.string().regex(/^term-\d+$/);
  const exit = z.object({
    exitCode: z.number().int().nullable(),
    signal: z.string().nullable(),
    detail: z.string().optional(),
    exitedAt: isoDate,
  });
  const record = z.object({
    id,
    n: z.number().int().positive(),
    sessionId: z.string().min(1),
    name: z.string().optional(),
    argv: z.array(z.string()).min(1),
    cwd: z.string(),
    pid: count,
    procStartTime: z.number().optional(),
    cols: z.number().int().positive(),
    rows: z.number().int().positive(),
    startedAt: isoDate,
    exit: exit.optional(),
  });
  return z.discriminatedUnion('op', [
    z.object({ op: z.literal('open'), record }),
    z.object({ op: z.literal('exit'), id, exit }),
    z.object({ op: z.literal('forget'), id }),
    z.object({ op: z.literal('next'), n: z.number().int().positive() }),
  ]);
});

/**
 * Replays journal text. Pure. A line that is not a valid entry — torn by a crash, damaged, or of an
 * op this version does not know — is skipped and counted, and the rest still counts: one bad line
 * must not lose the terminals (and their processes) the others name.
 */
export function replayTerminalJournal(text: string): TerminalJournalState & { skipped: number } {
  const records = new Map<string, TerminalRecord>();
  let nextNumber = 1;
  let skipped = 0;
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      skipped += 1;
      continue;
    }
    const parsed = entrySchema().safeParse(value);
    if (!parsed.success) {
      skipped += 1;
      continue;
    }
    const entry = parsed.data;
    switch (entry.op) {
      case 'open':
        records.set(entry.record.id, entry.record);
        nextNumber = Math.max(nextNumber, entry.record.n + 1);
        break;
      case 'exit': {
        const record = records.get(entry.id);
        if (record) record.exit = entry.exit;
        break;
      }
      case 'forget':
        records.delete(entry.id);
        break;
      case 'next':
        nextNumber = Math.max(nextNumber, entry.n);
        break;
    }
  }
  return { nextNumber, records: [...records.values()], skipped };
}

/** Appends before a compaction is considered at all. */
const COMPACT_MIN_ENTRIES = 1_000;
/** Compact once appends outnumber the records this many times. */
const COMPACT_RATIO = 4;

/** The open journal of a running daemon. */
export class TerminalJournal {
  private fd: number | undefined;
  private appended = 0;

  /** `current`: the table's state now, for compaction when the history has grown well past it. */
  constructor(
    readonly path: string,
    private readonly current: () => TerminalJournalState,
  ) {}

  /** Reads what a previous daemon left (a missing or unreadable file is an empty state). */
  load(): TerminalJournalState & { skipped: number } {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch {
      return { nextNumber: 1, records: [], skipped: 0 };
    }
    return replayTerminalJournal(text);
  }

  /** Rewrites the journal as `state` and keeps it open for appends. */
  rewrite(state: TerminalJournalState): void {
    const lines = [{ op: 'next', n: state.nextNumber }, ...state.records.map((record) => ({ op: 'open', record }))];
    const tmp = `${this.path}.tmp`;
    writeFileSync(tmp, lines.map((line) => `${JSON.stringify(line)}\n`).join(''), { mode: 0o600 });
    renameSync(tmp, this.path);
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = openSync(this.path, 'a', 0o600);
    this.appended = 0;
  }

  /** Appends one entry synchronously (dropped once closed). */
  append(entry: TerminalJournalEntry): void {
    if (this.fd === undefined) return;
    const line = Buffer.from(`${JSON.stringify(entry)}\n`);
    let done = 0;
    while (done < line.length) done += writeSync(this.fd, line, done, line.length - done);
    this.appended += 1;
    if (this.appended < COMPACT_MIN_ENTRIES) return;
    const state = this.current();
    if (this.appended >= COMPACT_RATIO * Math.max(1, state.records.length)) this.rewrite(state);
  }

  /** Closes the journal. */
  close(): void {
    if (this.fd === undefined) return;
    closeSync(this.fd);
    this.fd = undefined;
  }
}
