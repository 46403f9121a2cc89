/**
 * Issue 13, points 9 and 2 (the journal): a journal with bad records still replays; a full disk
 * never crashes the daemon, never glues a record onto a cut one, and journaling resumes once
 * space is free; SIGTERM's final compaction on a full disk exits 0 and leaves no temp file;
 * settled jobs stay within `maxSettledJobs` and `settledJobRetentionMs`.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ExecdRpcError } from '../../client/connection.js';
import { DaemonStatus, JobList, JobRead, JobWait, SessionOpen, ShellStart } from '../../protocol/methods.js';
import { loadJournal } from '../../daemon/jobs/journal.js';
import { startDaemon } from '../helpers/daemon.js';
import { waitJob } from '../helpers/jobs.js';
import { waitFor } from '../helpers/wait.js';

/** Mounts a tmpfs of `sizeMb` (mode 0700) for the test; lazily unmounted and removed when it finishes. */
function mountTmpfs(sizeMb: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'execd-tmpfs-'));
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m,mode=0700`, 'tmpfs', dir]);
  if (mounted.status !== 0) throw new Error(`mount failed: ${mounted.stderr.toString()}`);
  onTestFinished(() => {
    spawnSync('umount', ['-l', dir]);
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

/** Fills the file system holding `dir` to the last page. */
function fillDisk(dir: string): string {
  const filler = join(dir, 'filler');
  spawnSync('dd', ['if=/dev/zero', `of=${filler}`, 'bs=1M'], { stdio: 'ignore' });
  return filler;
}

/** The journal's lines: how many parse, and whether a line that does not parse sits before the last. */
function journalLines(path: string): { lines: number; glued: number; lastCut: boolean } {
  const lines = readFileSync(path, 'utf8').split('\n');
  const trailing = lines.at(-1) === '' ? lines.slice(0, -1) : lines;
  const parses = (line: string) => {
    try {
      JSON.parse(line);
      return true;
    } catch {
      return false;
    }
  };
  const glued = trailing.slice(0, -1).filter((line) => !parses(line)).length;
  return { lines: trailing.length, glued, lastCut: trailing.length > 0 && !parses(trailing.at(-1)!) };
}

/** Resident set size of a process in MB, from /proc. */
function rssMb(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return Math.round(kb / 102.4) / 10;
}

describe('job journal', () => {
  it('replays past records of the wrong shape, reporting each by line number without its content', async () => {
    const first = await startDaemon();
    const client = await first.session('s1');
    const kept = [];
    for (const n of [1, 2, 3]) {
      const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: `echo kept-${n}` });
      await waitJob(client, 's1', jobId);
      kept.push(jobId);
    }
    expect(await first.stop()).toBe(0);
    const journal = join(first.stateDir, 'jobs.journal');
    const good = readFileSync(journal, 'utf8').trim().split('\n');
    const record = JSON.parse(good.at(-1)!) as { t: string; job: Record<string, unknown> };
    const noStart: Record<string, unknown> = { ...record.job, id: 'bash-90', label: 'SECRET-LABEL' };
    delete noStart.startedAt;
    writeFileSync(
      journal,
      [
        good[0],
        '{"t":"job"}',
        good[1],
        JSON.stringify({ t: 'job', job: noStart }),
        'SECRET-GARBAGE',
        ...good.slice(2),
        JSON.stringify({ t: 'cursor', id: kept[0], stdout: 'SECRET', stderr: 0 }),
        '{"t":"job","job":{"id":"bash-',
      ].join('\n'),
    );
    const second = await startDaemon({ stateDir: first.stateDir, socketPath: first.socketPath });
    const after = await second.connect();
    const jobs = await after.call(JobList, { all: true });
    expect(jobs.map((job) => job.id)).toEqual(kept);
    expect(jobs.every((job) => job.status === 'completed')).toBe(true);
    await after.call(SessionOpen, { sessionId: 's1', cwd: second.dir });
    expect((await after.call(JobRead, { sessionId: 's1', jobId: kept[2]! })).delta).toBe('kept-3\n');
    const warnings = second
      .stderr()
      .split('\n')
      .filter((line) => line.includes('skipped a bad record'));
    expect(warnings.map((line) => (JSON.parse(line) as { line: number }).line)).toEqual([2, 4, 5, 8, 9]);
    expect(second.stderr()).not.toContain('SECRET');
    // The replay rewrote the journal from what it kept.
    expect(journalLines(journal)).toMatchObject({ glued: 0, lastCut: false });
    console.log(
      `journal replay: skipped ${warnings.length} bad lines (wrong shape, no startedAt, garbage, bad cursor, torn), kept ${jobs.length} jobs`,
    );
  });

  it('on a full disk: a settling job does not crash the daemon, nothing is glued, journaling resumes once space is free, SIGTERM exits 0', async () => {
    const stateDir = mountTmpfs(20);
    const first = await startDaemon({ stateDir });
    const client = await first.session('s1');
    const go = join(first.dir, 'go');
    // A record larger than the page a full tmpfs might still have room in.
    const label = `while [ ! -e ${go} ]; do sleep 0.05; done; : ${'x'.repeat(6000)}`;
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: label });
    const filler = fillDisk(stateDir);
    const free = statSync(filler).size;
    writeFileSync(go, '');
    const settled = await waitJob(client, 's1', jobId);
    expect(settled.status).toBe('completed');
    await waitFor(() => first.stderr().includes('job journal write failed'), 'the journal failure to be logged');
    expect((await client.call(DaemonStatus, {})).jobs.settled).toBe(1);
    const journal = join(stateDir, 'jobs.journal');
    const whileFull = journalLines(journal);
    expect(whileFull.glued).toBe(0);

    rmSync(filler);
    const { jobId: next } = await client.call(ShellStart, { sessionId: 's1', command: 'echo after' });
    await waitJob(client, 's1', next);
    // Caught up without a restart: the settlement that could not be written is on disk now.
    await waitFor(
      () => loadJournal(journal).jobs.find((job) => job.id === jobId)?.status === 'completed',
      'the journal to record the settlement missed on the full disk',
    );
    expect(journalLines(journal)).toMatchObject({ glued: 0, lastCut: false });
    expect(existsSync(`${journal}.tmp`)).toBe(false);

    // A crash now: the next daemon finds what was journaled after the disk was freed.
    await first.crash();
    const second = await startDaemon({ stateDir, socketPath: first.socketPath });
    const after = await second.connect();
    const jobs = await after.call(JobList, { all: true });
    expect(jobs.map((job) => [job.id, job.status])).toEqual([
      [jobId, 'completed'],
      [next, 'completed'],
    ]);

    // Full again, with a job to kill: the final compaction fails quietly.
    await after.call(SessionOpen, { sessionId: 's1', cwd: second.dir });
    await after.call(ShellStart, { sessionId: 's1', command: 'sleep 300' });
    fillDisk(stateDir);
    const code = await second.stop();
    expect(code).toBe(0);
    expect(readdirSync(stateDir).filter((name) => name.endsWith('.tmp'))).toEqual([]);
    console.log(
      `full disk: filled ${free} bytes of a 20 MiB tmpfs; the settling job's record ${whileFull.lastCut ? 'was cut mid-line' : 'was not written'}, ` +
        `daemon kept serving; after freeing, the journal caught up (${journalLines(journal).lines} lines, 0 glued) and a crash-restart found both jobs completed; ` +
        `SIGTERM on a full disk exited ${code} with no jobs.journal.tmp`,
    );
  });

  it('keeps at most maxSettledJobs settled jobs, oldest released first with their files, also across a restart', async () => {
    const JOBS = 600;
    const first = await startDaemon({ config: { maxSettledJobs: 20 } });
    const client = await first.session('s1');
    const rssBefore = rssMb(first.pid);
    const ids: string[] = [];
    let rssThird = 0;
    for (let i = 0; i < JOBS; i += 10) {
      if (i === JOBS / 3) rssThird = rssMb(first.pid);
      const batch = await Promise.all(
        Array.from({ length: 10 }, (_, j) =>
          client.call(ShellStart, { sessionId: 's1', command: `echo job-${i + j}; echo err >&2` }),
        ),
      );
      for (const { jobId } of batch) ids.push(jobId);
      await Promise.all(batch.map(({ jobId }) => waitJob(client, 's1', jobId).catch(() => undefined)));
    }
    const jobs = await waitFor(async () => {
      const list = await client.call(JobList, { sessionId: 's1' });
      return list.length <= 20 ? list : undefined;
    }, 'the table to shrink to maxSettledJobs');
    expect(jobs.map((job) => job.id)).toEqual(ids.slice(-20));
    const released = ids[0]!;
    const error = await client.call(JobRead, { sessionId: 's1', jobId: released }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExecdRpcError);
    expect((error as ExecdRpcError).errorName).toBe('JOB_NOT_FOUND');
    const spillDir = join(first.stateDir, 'spill', 's1');
    await waitFor(() => readdirSync(spillDir).length <= 40, 'the released jobs’ files to be deleted');
    expect(readdirSync(spillDir).sort()).toEqual(
      ids
        .slice(-20)
        .flatMap((id) => [`${id}.stderr`, `${id}.stdout`])
        .sort(),
    );
    const journalBytes = statSync(join(first.stateDir, 'jobs.journal')).size;
    const statusStarted = performance.now();
    const status = await client.call(DaemonStatus, {});
    const statusMs = Math.round(performance.now() - statusStarted);
    expect(status.jobs.settled).toBe(20);
    const rssAfter = rssMb(first.pid);
    expect(await first.stop()).toBe(0);
    const restartStarted = performance.now();
    const second = await startDaemon({ stateDir: first.stateDir, socketPath: first.socketPath });
    const restartMs = Math.round(performance.now() - restartStarted);
    const after = await second.connect();
    expect((await after.call(JobList, { all: true })).map((job) => job.id)).toEqual(ids.slice(-20));
    console.log(
      `settled bound: ${JOBS} jobs with maxSettledJobs=20 kept ${jobs.length} (the newest), ${readdirSync(spillDir).length} log files; ` +
        `journal ${journalBytes} bytes; daemon RSS ${rssBefore} MB before, ${rssThird} MB after ${JOBS / 3} jobs, ${rssAfter} MB after ${JOBS}; daemon/status ${statusMs} ms; restart ${restartMs} ms ` +
        `(issue, unbounded: 10,000 jobs → 16 MB journal, 2.0 s status, 2.8 s restart)`,
    );
  });

  it('releases settled jobs older than settledJobRetentionMs, never a running one', async () => {
    const daemon = await startDaemon({ config: { settledJobRetentionMs: 500 } });
    const client = await daemon.session('s1');
    const { jobId: done } = await client.call(ShellStart, { sessionId: 's1', command: 'echo soon gone' });
    const { jobId: running } = await client.call(ShellStart, { sessionId: 's1', command: 'sleep 300' });
    const settled = await client.call(JobWait, { sessionId: 's1', jobId: done });
    const settledAt = Date.parse(settled.finishedAt!);
    await waitFor(
      async () => !(await client.call(JobList, { sessionId: 's1' })).some((job) => job.id === done),
      'the settled job to be released',
    );
    const releasedAfter = Date.now() - settledAt;
    const list = await client.call(JobList, { sessionId: 's1' });
    expect(list.map((job) => [job.id, job.status])).toEqual([[running, 'running']]);
    expect(existsSync(join(daemon.stateDir, 'spill', 's1', `${done}.stdout`))).toBe(false);
    expect(releasedAfter).toBeGreaterThanOrEqual(450);
    console.log(
      `settled age bound: a job settled ${releasedAfter} ms earlier was released (settledJobRetentionMs=500)`,
    );
  });
});
