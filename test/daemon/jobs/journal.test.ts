/** The job journal: replay of its entries, torn lines, ids that continue, compaction. */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { replayJournal, type JobRecord, type JournalEntry } from '../../../daemon/jobs/journal-entries.js';
import { JobJournal, loadJournal } from '../../../daemon/jobs/journal.js';
import { LogFileStream } from '../../../daemon/jobs/job-streams.js';
import { jobSnapshot } from '../../helpers/results.js';
import { waitFor } from '../../helpers/wait.js';

function record(id: string, patch: Partial<JobRecord> = {}): JobRecord {
  const { kind: _kind, ...snapshot } = jobSnapshot({ id, pid: 123 });
  return {
    ...snapshot,
    stdoutPath: `/tmp/${id}.stdout`,
    stderrPath: `/tmp/${id}.stderr`,
    cursor: { stdout: 0, stderr: 0 },
    ...patch,
  };
}

const lines = (...entries: JournalEntry[]) => entries.map((entry) => `${JSON.stringify(entry)}\n`).join('');

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'execd-journal-'));
  dirs.push(dir);
  return dir;
}

describe('replayJournal', () => {
  it('keeps the last record of each job, applies cursors, drops forgotten jobs', () => {
    const text = lines(
      { t: 'job', job: record('bash-1') },
      { t: 'job', job: record('bash-2') },
      { t: 'job', job: record('bash-1', { status: 'completed', detail: 'exit code: 0' }) },
      { t: 'cursor', id: 'bash-1', stdout: 5, stderr: 2 },
      { t: 'forget', id: 'bash-2' },
    );
    const state = replayJournal(text);
    expect(state.jobs).toHaveLength(1);
    expect(state.jobs[0]).toMatchObject({ id: 'bash-1', status: 'completed', cursor: { stdout: 5, stderr: 2 } });
    expect(state.nextNumber).toBe(3);
  });

  it('continues ids past forgotten jobs and the sequence record', () => {
    expect(replayJournal(lines({ t: 'seq', next: 40 }, { t: 'job', job: record('bash-7') })).nextNumber).toBe(40);
    expect(replayJournal(lines({ t: 'job', job: record('bash-7') }, { t: 'forget', id: 'bash-7' })).nextNumber).toBe(8);
    expect(replayJournal('').nextNumber).toBe(1);
  });

  it('skips a torn last line and garbage, and reports them by line number', () => {
    const text = `${lines({ t: 'job', job: record('bash-1') })}not json\n{"t":"job","job":{"id":"bash-`;
    const state = replayJournal(text);
    expect(state.jobs.map((job) => job.id)).toEqual(['bash-1']);
    expect(state.skipped).toEqual([
      { line: 2, type: 'unknown', reason: 'not JSON' },
      { line: 3, type: 'unknown', reason: 'not JSON' },
    ]);
  });

  it('skips records of the wrong shape, naming the fields but never the content, and keeps the rest', () => {
    const { startedAt: _startedAt, ...noStart } = record('bash-2');
    const text = [
      JSON.stringify({ t: 'job' }),
      JSON.stringify({ t: 'job', job: noStart }),
      JSON.stringify({ t: 'job', job: record('bash-3', { startedAt: 'secret-not-a-date' }) }),
      JSON.stringify({ t: 'cursor', id: 'bash-1', stdout: -1, stderr: 0 }),
      JSON.stringify({ t: 'secret-type' }),
      JSON.stringify([1, 2]),
      JSON.stringify(null),
      JSON.stringify({ t: 'job', job: record('bash-1') }),
      JSON.stringify({ t: 'cursor', id: 'bash-1', stdout: 4, stderr: 0 }),
    ].join('\n');
    const state = replayJournal(text);
    expect(state.jobs.map((job) => [job.id, job.cursor.stdout])).toEqual([['bash-1', 4]]);
    expect(state.skipped).toEqual([
      { line: 1, type: 'job', reason: 'invalid job' },
      { line: 2, type: 'job', reason: 'invalid job.startedAt' },
      { line: 3, type: 'job', reason: 'invalid job.startedAt' },
      { line: 4, type: 'cursor', reason: 'invalid stdout' },
      { line: 5, type: 'unknown', reason: 'invalid t' },
      { line: 6, type: 'unknown', reason: expect.stringMatching(/^invalid /) as unknown },
      { line: 7, type: 'unknown', reason: expect.stringMatching(/^invalid /) as unknown },
    ]);
    expect(JSON.stringify(state.skipped)).not.toContain('secret');
  });
});

describe('JobJournal', () => {
  it('compacts so that its size follows the table, not the history', () => {
    const path = join(tempDir(), 'jobs.journal');
    const jobs = [record('bash-1'), record('bash-2')];
    const journal = new JobJournal(path, { state: () => ({ nextNumber: 3, jobs }), jobCount: () => jobs.length });
    journal.compact();
    let largest = 0;
    for (let i = 1; i <= 10_000; i++) {
      jobs[0]!.cursor = { stdout: i, stderr: 0 };
      journal.append({ t: 'cursor', id: 'bash-1', stdout: i, stderr: 0 });
      largest = Math.max(largest, statSync(path).size);
    }
    const replayed = loadJournal(path);
    expect(replayed.jobs[0]!.cursor.stdout).toBe(10_000);
    expect(replayed.nextNumber).toBe(3);
    // 1,000 cursor lines are about 60 kB; the journal never holds much more than that.
    expect(largest).toBeLessThan(100_000);
    journal.close();
    expect(readFileSync(path, 'utf8').trim().split('\n')).toHaveLength(3);
    console.log(`10000 appends: journal peaked at ${largest} bytes, ${statSync(path).size} after close`);
  });

  it('loads a missing journal as an empty table', () => {
    expect(loadJournal(join(tempDir(), 'none'))).toEqual({ nextNumber: 1, jobs: [], skipped: [] });
  });

  it('reports an unreadable journal instead of throwing', () => {
    expect(loadJournal(tempDir())).toMatchObject({ nextNumber: 1, jobs: [], readError: 'EISDIR' });
  });

  it('never throws when it cannot write, leaves no temp file, and catches up once it can', async () => {
    const dir = tempDir();
    const path = join(dir, 'jobs.journal');
    const jobs = [record('bash-1')];
    const journal = new JobJournal(path, { state: () => ({ nextNumber: 2, jobs }), jobCount: () => jobs.length });
    expect(journal.compact()).toBe(true);
    // The journal path becomes a directory: every write fails, as on a full disk.
    rmSync(path);
    mkdirSync(path);
    jobs[0] = record('bash-1', { status: 'completed', detail: 'exit code: 0' });
    expect(() => journal.compact()).not.toThrow();
    expect(journal.isBehind).toBe(true);
    expect(existsSync(`${path}.tmp`)).toBe(false);
    rmSync(path, { recursive: true });
    // Within a second the whole journal is rewritten, including every change that could not be written.
    jobs[0].cursor = { stdout: 3, stderr: 0 };
    journal.append({ t: 'cursor', id: 'bash-1', stdout: 3, stderr: 0 });
    await waitFor(() => !journal.isBehind, 'the journal to catch up');
    expect(loadJournal(path).jobs[0]).toMatchObject({ status: 'completed', cursor: { stdout: 3 } });
    journal.close();
  });
});

describe('LogFileStream', () => {
  it('reads a restored log through a window of the live size, lossy when the reader is further behind', () => {
    const path = join(tempDir(), 'bash-1.stdout');
    writeFileSync(path, '0123456789');
    const stream = new LogFileStream(path, 10, 4);
    expect(stream.sliceFrom(0)).toEqual({ bytes: Buffer.from('6789'), offset: 6, lossy: true });
    expect(stream.sliceFrom(7)).toEqual({ bytes: Buffer.from('789'), offset: 7, lossy: false });
    expect(stream.logPath).toBe(path);
  });

  it('reports bytes it no longer has as lossy when the file is gone', () => {
    const stream = new LogFileStream(undefined, 10, 4);
    expect(stream.sliceFrom(3)).toEqual({ bytes: new Uint8Array(0), offset: 10, lossy: true });
    expect(stream.logPath).toBeUndefined();
  });
});
