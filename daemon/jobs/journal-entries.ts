/**
 * The job journal's format and its replay (pure). The journal is append-only JSON lines; the last
 * full record of a job wins, `cursor` entries move its reader, `forget` drops it, and `seq` keeps
 * the next id even when every job it counted was forgotten.
 */
import type { JobSnapshot } from '../../protocol/types.js';
import { jobNumber } from './ids.js';

/** Everything needed to bring a job back after a restart: its snapshot, its files, its reader. */
export interface JobRecord extends Omit<JobSnapshot, 'kind'> {
  /** `/proc` start time of the group leader, so a reused pid is never killed. */
  procStartTime?: number;
  stdoutPath: string;
  stderrPath: string;
  cursor: { stdout: number; stderr: number };
}

/** One line of the journal. */
export type JournalEntry =
  | { t: 'seq'; next: number }
  | { t: 'job'; job: JobRecord }
  | { t: 'cursor'; id: string; stdout: number; stderr: number }
  | { t: 'forget'; id: string };

/** What a replay yields: the jobs in id order and the next job number. */
export interface JournalState {
  nextNumber: number;
  jobs: JobRecord[];
}

/** Parses one line; a torn last line (a crash mid-write) or garbage yields undefined. */
export function parseEntry(line: string): JournalEntry | undefined {
  try {
    const entry: unknown = JSON.parse(line);
    return typeof entry === 'object' && entry !== null && 't' in entry && typeof entry.t === 'string'
      ? (entry as JournalEntry)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Replays journal text into the table's state. */
export function replayJournal(text: string): JournalState {
  const jobs = new Map<string, JobRecord>();
  let nextNumber = 1;
  const see = (id: string) => {
    const n = jobNumber(id);
    if (n !== undefined) nextNumber = Math.max(nextNumber, n + 1);
  };
  for (const line of text.split('\n')) {
    if (line.length === 0) continue;
    const entry = parseEntry(line);
    if (!entry) continue;
    switch (entry.t) {
      case 'seq':
        if (Number.isSafeInteger(entry.next)) nextNumber = Math.max(nextNumber, entry.next);
        break;
      case 'job':
        see(entry.job.id);
        jobs.set(entry.job.id, entry.job);
        break;
      case 'cursor': {
        const job = jobs.get(entry.id);
        if (job) job.cursor = { stdout: entry.stdout, stderr: entry.stderr };
        break;
      }
      case 'forget':
        see(entry.id);
        jobs.delete(entry.id);
        break;
    }
  }
  const ordered = [...jobs.values()].sort((a, b) => (jobNumber(a.id) ?? 0) - (jobNumber(b.id) ?? 0));
  return { nextNumber, jobs: ordered };
}

/** The entries of a compacted journal: the sequence, then one full record per job. */
export function compactedEntries(state: JournalState): JournalEntry[] {
  return [{ t: 'seq', next: state.nextNumber }, ...state.jobs.map((job): JournalEntry => ({ t: 'job', job }))];
}
