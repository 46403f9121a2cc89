/**
 * The job journal's format and its replay (pure). The journal is append-only JSON lines; the last
 * full record of a job wins, `cursor` entries move its reader, `forget` drops it, and `seq` keeps
 * the next id even when every job it counted was forgotten.
 *
 * Every line is validated before it is used: a torn line, garbage, or a record of the wrong shape
 * is skipped and reported (line number, type, the fields at fault — never its content), and the
 * replay goes on with the rest, so one bad line never keeps the daemon from starting.
 */
import { SANDBOX_MODES } from '../../protocol/sandbox.js';
import type { JobSnapshot } from '../../protocol/types.js';
import { lazySchema } from '../../protocol/zod.js';
import { jobNumber } from './ids.js';

/** Everything needed to bring a job back after a restart: its snapshot, its files, its reader. */
export interface JobRecord extends Omit<JobSnapshot, 'kind'> {
  /** `/proc` start time of the group leader, so a reused pid is never killed. */
  procStartTime?: number;
  /** Started with `keepStdinOpen`. */
  keepStdinOpen?: boolean;
  /** Left running by a `daemon/shutdown { keepJobs }`: the next daemon adopts it. */
  kept?: boolean;
  /** The key of the keyed `shell/start` that created the job, and its params' fingerprint. */
  requestKey?: { key: string; fingerprint: string };
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

/** A journal line the replay could not use, described without its content. */
export interface SkippedLine {
  /** 1-based line number in the journal file. */
  line: number;
  /** The entry's `t` when it is one of the known types, else `unknown`. */
  type: string;
  /** `not JSON` or the fields that broke the rule, e.g. `invalid job.startedAt`. */
  reason: string;
}

/** A replay's state and the lines it had to skip. */
export interface JournalReplay extends JournalState {
  skipped: SkippedLine[];
}

const ENTRY_TYPES = ['seq', 'job', 'cursor', 'forget'] as const;

/** The schema of one journal line (built on first use). */
const journalEntrySchema = lazySchema((z) => {
  const count = z.number().int().nonnegative();
  const isoDate = z.string().refine((text) => !Number.isNaN(Date.parse(text)));
  const jobId = z.string().refine((id) => jobNumber(id) !== undefined);
  const record = z.object({
    id: jobId,
    label: z.string(),
    ownerSession: z.string().min(1),
    status: z.enum(['running', 'stopping', 'completed', 'killed', 'failed', 'lost']),
    detail: z.string().optional(),
    pid: count,
    procStartTime: z.number().optional(),
    keepStdinOpen: z.boolean().optional(),
    kept: z.boolean().optional(),
    requestKey: z.object({ key: z.string().min(1).max(128), fingerprint: z.string().min(1) }).optional(),
    exitCode: z.number().int().nullable(),
    signal: z.string().nullable(),
    startedAt: isoDate,
    finishedAt: isoDate.optional(),
    reported: z.boolean(),
    stdoutBytes: count,
    stderrBytes: count,
    sandbox: z
      .object({
        mode: z.enum(SANDBOX_MODES),
        denied: z.boolean(),
        enforcement: z.string().optional(),
        runnerFailed: z.boolean().optional(),
      })
      .optional(),
    stdoutPath: z.string().min(1),
    stderrPath: z.string().min(1),
    cursor: z.object({ stdout: count, stderr: count }),
  });
  return z.discriminatedUnion('t', [
    z.object({ t: z.literal('seq'), next: z.number().int().positive() }),
    z.object({ t: z.literal('job'), job: record }),
    z.object({ t: z.literal('cursor'), id: jobId, stdout: count, stderr: count }),
    z.object({ t: z.literal('forget'), id: jobId }),
  ]);
});

/** Parses and validates one line: the entry, or why it cannot be used (never quoting the line). */
export function parseEntry(line: string): JournalEntry | Omit<SkippedLine, 'line'> {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return { type: 'unknown', reason: 'not JSON' };
  }
  const t = (value as { t?: unknown } | null)?.t;
  const type = ENTRY_TYPES.find((known) => known === t) ?? 'unknown';
  const parsed = journalEntrySchema().safeParse(value);
  if (parsed.success) return parsed.data;
  const fields = [...new Set(parsed.error.issues.map((issue) => issue.path.join('.') || 'entry'))].slice(0, 5);
  return { type, reason: `invalid ${fields.join(', ')}` };
}

/** Replays journal text into the table's state, skipping (and listing) the lines it cannot use. */
export function replayJournal(text: string): JournalReplay {
  const jobs = new Map<string, JobRecord>();
  const skipped: SkippedLine[] = [];
  let nextNumber = 1;
  const see = (id: string) => {
    const n = jobNumber(id);
    if (n !== undefined) nextNumber = Math.max(nextNumber, n + 1);
  };
  const lines = text.split('\n');
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!;
    if (line.length === 0) continue;
    const entry = parseEntry(line);
    if (!('t' in entry)) {
      skipped.push({ line: index + 1, ...entry });
      continue;
    }
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
  return { nextNumber, jobs: ordered, skipped };
}

/** The entries of a compacted journal: the sequence, then one full record per job. */
export function compactedEntries(state: JournalState): JournalEntry[] {
  return [{ t: 'seq', next: state.nextNumber }, ...state.jobs.map((job): JournalEntry => ({ t: 'job', job }))];
}
