/** The job journal: replay of its entries, torn lines, ids that continue, compaction. */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { replayJournal, type JobRecord, type JournalEntry } from '../../../daemon/jobs/journal-entries.js';
import { JobJournal, loadJournal } from '../../../daemon/jobs/journal.js';
import { LogFileStream } from '../../../daemon/jobs/job-streams.js';
import { jobSnapshot } from '../../helpers/results.js';

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

  it('skips a torn last line and garbage', () => {
    const text = `${lines({ t: 'job', job: record('bash-1') })}not json\n{"t":"job","job":{"id":"bash-`;
    const state = replayJournal(text);
    expect(state.jobs.map((job) => job.id)).toEqual(['bash-1']);
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
    expect(loadJournal(join(tempDir(), 'none'))).toEqual({ nextNumber: 1, jobs: [] });
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
