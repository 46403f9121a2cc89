/**
 * Issue 13, point 2: a full disk never takes the daemon down. The state dir is a small tmpfs
 * mounted for the test (as root), filled for real: runs still answer their output, a spill or log
 * file that cannot be written is named in the result (`saveError`) or the job's detail, the daemon
 * serves other clients, works again once the disk is freed, and SIGTERM still exits 0 with every
 * process killed and no lock or temp file left.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ConfigGet, ConfigSet, JobKill, JobList, SessionClose, ShellStart } from '../../protocol/methods.js';
import { startDaemon, waitPidsGone, type TestDaemon } from '../helpers/daemon.js';
import { waitJob } from '../helpers/jobs.js';
import { pidAlive, pidsIn } from '../helpers/procs.js';

/** Mounts a tmpfs (mode 0700) for the test's state dir; unmounted and removed when the test ends. */
function mountTmpfs(options: string): string {
  const base = mkdtempSync(join(tmpdir(), 'execd-disk-'));
  const dir = join(base, 'state');
  mkdirSync(dir, { mode: 0o700 });
  execFileSync('mount', ['-t', 'tmpfs', '-o', `${options},mode=0700`, 'tmpfs', dir]);
  onTestFinished(() => {
    // Lazy: a daemon still being stopped may hold files there; the mount goes once they close.
    execFileSync('umount', ['-l', dir]);
    rmSync(base, { recursive: true, force: true });
  });
  return dir;
}

/** Fills the file system of `dir` with one file until it is full; returns the file. */
function fillDisk(dir: string): string {
  const filler = join(dir, 'filler');
  execFileSync('bash', ['-c', 'head -c 64M /dev/zero > "$0" 2>/dev/null; true', filler]);
  expect(freeBytes(dir)).toBe(0);
  return filler;
}

function freeBytes(dir: string): number {
  const info = statfsSync(dir);
  return info.bavail * info.bsize;
}

async function expectServedByNewClient(daemon: TestDaemon, sessionId: string): Promise<void> {
  const client = await daemon.session(sessionId);
  const result = await client.run({ sessionId, command: 'echo next' });
  expect(result.stdout.text).toBe('next\n');
  expect(daemon.proc.exitCode).toBeNull();
}

describe('a full disk', () => {
  it('20 MiB tmpfs filled: runs answer their output, unsaved files are named, others are served, and freeing the disk is enough', async () => {
    const stateDir = mountTmpfs('size=20m');
    const daemon = await startDaemon({ stateDir });
    const client = await daemon.session('s1');
    const filler = fillDisk(stateDir);

    const small = await client.run({ sessionId: 's1', command: 'echo out; echo err >&2' });
    expect(small).toMatchObject({ exitCode: 0, stdout: { text: 'out\n' }, stderr: { text: 'err\n' } });

    // 1.3 MB of output: past maxOutputBytes it must spill, and the spill file cannot be written.
    const spilling = await client.run({ sessionId: 's1', command: 'seq 1 200000; seq 1 100000 >&2' });
    expect(spilling.exitCode).toBe(0);
    expect(spilling.stdout.truncated).toBe(true);
    expect(spilling.stdout.text.endsWith('\n199999\n200000\n')).toBe(true);
    expect(spilling.stdout.spillPath).toBeUndefined();
    expect(spilling.stdout.saveError).toMatch(/^output could not be saved: ENOSPC/);
    expect(spilling.stderr.saveError).toMatch(/^output could not be saved: ENOSPC/);
    expect(spilling.stderr.text.endsWith('\n100000\n')).toBe(true);

    // A job writing stderr onto the full disk settles, and its detail names the disk.
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'seq 1 100000 >&2; echo done' });
    const job = await waitJob(client, 's1', jobId);
    expect(['completed', 'failed']).toContain(job.status);
    expect(job.detail).toMatch(/ENOSPC/);

    // A persisted config/set cannot be written: refused naming the cause, nothing changed, no temp file.
    const persisted = await client.call(ConfigSet, { patch: { timeoutMs: 5000 }, persist: true }).then(
      () => 'applied',
      (error: Error) => error.message,
    );
    expect(persisted).toMatch(/ENOSPC/);
    expect((await client.call(ConfigGet, {})).timeoutMs).toBe(120_000);
    expect(existsSync(join(stateDir, 'config.json.tmp'))).toBe(false);

    await expectServedByNewClient(daemon, 'other');

    // Freed: the same run spills into its file again, without a restart.
    rmSync(filler);
    const freed = await client.run({ sessionId: 's1', command: 'seq 1 200000' });
    expect(freed.stdout.spillPath).toBeDefined();
    expect(existsSync(freed.stdout.spillPath!)).toBe(true);
    expect(freed.stdout.saveError).toBeUndefined();
    const again = await client.call(ShellStart, { sessionId: 's1', command: 'seq 1 100000 >&2' });
    const settled = await waitJob(client, 's1', again.jobId);
    expect(settled).toMatchObject({ status: 'completed', detail: 'exit code: 0' });
    console.log(
      `full-disk: 20 MiB tmpfs at 0 bytes free; a small run answered ${JSON.stringify(small.stdout.text)} and ${JSON.stringify(small.stderr.text)}; ` +
        `a 1.3 MB run answered its ${spilling.stdout.text.length}-character tail with "${spilling.stdout.saveError}"; ` +
        `a job writing stderr settled ${job.status} (${job.detail}); a persisted config/set answered "${persisted}"; another client was served; ` +
        `after freeing the disk a run spilled to its file and a job completed (${settled.detail})`,
    );
  });

  it('SIGTERM with the disk full: exit 0, the job and a leftover killed, no daemon.lock and no temp file left', async () => {
    const stateDir = mountTmpfs('size=20m');
    const daemon = await startDaemon({ stateDir });
    const client = await daemon.session('s1');
    const job = await client.call(ShellStart, { sessionId: 's1', command: 'sleep 300' });
    const leftover = pidsIn(
      (await client.run({ sessionId: 's1', command: 'sleep 300 >/dev/null 2>&1 & echo $!' })).stdout.text,
    )[0]!;
    expect(pidAlive(job.pid) && pidAlive(leftover)).toBe(true);
    fillDisk(stateDir);

    const exitCode = await daemon.stop();
    const alive = await waitPidsGone([job.pid, leftover], 5_000);
    const left = readdirSync(stateDir).filter((name) => name === 'daemon.lock' || name.endsWith('.tmp'));
    expect(exitCode).toBe(0);
    expect(alive).toEqual([]);
    expect(left).toEqual([]);
    // The journal's final compaction could not be written: logged, and the shutdown went on.
    expect(daemon.stderr()).toMatch(/"operation":"compact","code":"ENOSPC"/);
    console.log(
      `full-disk: SIGTERM at 0 bytes free exited ${exitCode}; job pid ${job.pid} and leftover pid ${leftover} gone: ${alive.length === 0}; ` +
        `left in the state dir: ${left.length === 0 ? 'no lock, no temp file' : left.join(', ')}`,
    );
  });

  it('job starts on a full disk: each runs or settles failed naming ENOSPC with its process killed; kill, close and SIGTERM finish', async () => {
    const stateDir = mountTmpfs('size=20m');
    const daemon = await startDaemon({ stateDir, config: { maxJobsPerSession: 200, maxProcesses: 400 } });
    const client = await daemon.session('s1');
    fillDisk(stateDir);
    // Journal appends fill the journal's last page; one that needs a new page fails, before or
    // after the spawn depending on where the page ends. 16 starts write well past a 4 KiB page.
    for (let i = 0; i < 16; i++) await client.call(ShellStart, { sessionId: 's1', command: 'sleep 300' });
    const jobs = await client.call(JobList, { sessionId: 's1' });
    expect(jobs).toHaveLength(16);
    const failed = jobs.filter((job) => job.status === 'failed');
    const running = jobs.filter((job) => job.status === 'running');
    expect(failed.length + running.length).toBe(16);
    for (const job of running) expect(pidAlive(job.pid)).toBe(true);
    for (const job of failed) expect(job.detail).toMatch(/^start failed: ENOSPC/);
    // A process spawned before its start failed was killed: none is left running unwatched.
    expect(
      await waitPidsGone(
        failed.filter((job) => job.pid > 0).map((job) => job.pid),
        5_000,
      ),
    ).toEqual([]);
    const started = Date.now();
    for (const job of failed)
      expect(await client.call(JobKill, { sessionId: 's1', jobId: job.id })).toEqual({ killed: false });
    const closed = await client.call(SessionClose, { sessionId: 's1' });
    const closeMs = Date.now() - started;
    expect(closed.killedJobs).toBe(running.length);
    await expectServedByNewClient(daemon, 'other');
    const exitCode = await daemon.stop();
    expect(exitCode).toBe(0);
    expect(await waitPidsGone(jobs.filter((job) => job.pid > 0).map((job) => job.pid))).toEqual([]);
    const afterSpawn = failed.filter((job) => job.pid > 0).length;
    console.log(
      `full-disk: 16 job starts on a full disk: ${running.length} running, ${failed.length} failed at a journal write ` +
        `(${afterSpawn} after the spawn, their processes killed)${failed[0] ? `: "${failed[0].detail}"` : ''}; ` +
        `job/kill of the failed ones and session/close (${closed.killedJobs} jobs killed) answered in ${closeMs} ms; SIGTERM exited ${exitCode}`,
    );
  });

  it('a run that fills the disk while writing straight into its capture file: the incomplete file is dropped and named', async () => {
    // 80 MiB: above the 64 MiB a direct capture needs at its start, below the 100 MB the run writes.
    const stateDir = mountTmpfs('size=80m');
    const daemon = await startDaemon({ stateDir, config: { maxSpillBytes: 200 * 1024 * 1024 } });
    const client = await daemon.session('s1');
    const before = freeBytes(stateDir);
    const run = await client.run({ sessionId: 's1', command: 'head -c 100000000 /dev/zero' });
    expect(run.exitCode).not.toBe(0);
    expect(run.stdout.truncated).toBe(true);
    expect(run.stdout.spillPath).toBeUndefined();
    expect(run.stdout.saveError).toBe(
      "output could not be saved: ENOSPC: the capture file's file system filled up during the run; output written after that is lost",
    );
    // The incomplete file is gone, and with it the space it took.
    const after = freeBytes(stateDir);
    expect(after).toBeGreaterThan(60 * 1024 * 1024);
    await expectServedByNewClient(daemon, 'other');
    console.log(
      `full-disk: 80 MiB tmpfs (${before} bytes free), a run writing 100000000 bytes straight into its capture file exited ${run.exitCode}; ` +
        `answered "${run.stdout.saveError}", no spillPath, ${after} bytes free afterwards`,
    );
  });

  it('out of inodes: capture files cannot be created, runs and jobs still answer their output', async () => {
    const stateDir = mountTmpfs('size=20m,nr_inodes=64');
    const daemon = await startDaemon({ stateDir });
    const client = await daemon.session('s1');
    const fill = join(stateDir, 'inodes');
    mkdirSync(fill);
    let created = 0;
    try {
      for (;;) {
        execFileSync('touch', [join(fill, String(created))], { stdio: 'ignore' });
        created += 1;
      }
    } catch {
      // ENOSPC: no inode left.
    }
    const run = await client.run({ sessionId: 's1', command: 'echo hi; seq 1 100000' });
    expect(run.exitCode).toBe(0);
    expect(run.stdout.text.startsWith('hi\n') || run.stdout.truncated).toBe(true);
    expect(run.stdout.text.endsWith('\n100000\n')).toBe(true);
    expect(run.stdout.saveError).toMatch(/ENOSPC/);
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'echo job-out' });
    const job = await waitJob(client, 's1', jobId);
    expect(job.status).toBe('completed');
    expect(job.detail).toMatch(/^exit code: 0; stdout: output could not be saved: ENOSPC/);
    await expectServedByNewClient(daemon, 'other');
    rmSync(fill, { recursive: true });
    const freed = await client.run({ sessionId: 's1', command: 'seq 1 100000' });
    expect(freed.stdout.spillPath).toBeDefined();
    console.log(
      `full-disk: tmpfs with 64 inodes, ${created} files created to use them up; a spilling run answered its tail with "${run.stdout.saveError}"; ` +
        `a job completed (${job.detail}); after freeing the inodes a run spilled to its file`,
    );
  });
});
