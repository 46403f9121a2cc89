/**
 * Issue 13, point 4: a session id names its own directory under `<stateDir>/spill` and nothing
 * else. `.` and `..` are refused; closing a session deletes only its own files; a symlink planted
 * in place of a session's directory, or of a job's log file, is never written through nor deleted
 * through.
 */
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { sessionDirName } from '../../daemon/sessions/session-lifecycle.js';
import { JobRead, JobRelease, SessionClose, SessionOpen, ShellRun, ShellStart } from '../../protocol/methods.js';
import { startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { waitJob } from '../helpers/jobs.js';
import { rejection } from '../helpers/rejection.js';

async function expectServedByNewClient(daemon: TestDaemon, sessionId: string): Promise<void> {
  const client = await daemon.session(sessionId);
  expect((await client.run({ sessionId, command: 'echo next' })).stdout.text).toBe('next\n');
}

/** A directory outside the state dir with one file that must survive everything. */
function victimDir(daemon: TestDaemon): string {
  const victim = join(daemon.dir, 'victim');
  mkdirSync(victim);
  writeFileSync(join(victim, 'precious'), 'precious');
  return victim;
}

describe('session ids and their directories', () => {
  it('refuses . and ..; closing the session ... deletes only its own files', async () => {
    const daemon = await startDaemon({ config: { maxOutputBytes: 1000 } });
    const client = await daemon.session('keep');
    const kept = await client.run({ sessionId: 'keep', command: 'seq 1 10000' });
    expect(kept.stdout.spillPath).toBeDefined();

    const refusals: string[] = [];
    for (const sessionId of ['.', '..']) {
      for (const call of [
        client.call(SessionOpen, { sessionId, cwd: daemon.dir }),
        client.call(SessionClose, { sessionId }),
        client.call(ShellRun, { sessionId, command: 'cat token' }),
      ]) {
        const error = await rejection(call);
        expect(error.errorName).toBe('INVALID_PARAMS');
        expect(error.message).toBe('sessionId must not be "." or ".."');
        refusals.push(error.message);
      }
    }
    // `...` is an ordinary name: its own directory, and closing it touches nothing else.
    await client.call(SessionOpen, { sessionId: '...', cwd: daemon.dir });
    const dots = await client.run({ sessionId: '...', command: 'seq 1 10000' });
    expect(dots.stdout.spillPath).toBe(
      join(daemon.stateDir, 'spill', '...', dots.stdout.spillPath!.split('/').at(-1)!),
    );
    const closed = await client.call(SessionClose, { sessionId: '...' });
    expect(closed.removedFiles).toBe(1);
    expect(existsSync(kept.stdout.spillPath!)).toBe(true);
    for (const name of ['token', 'daemon.lock', 'jobs.journal'])
      expect(existsSync(join(daemon.stateDir, name))).toBe(true);
    await expectServedByNewClient(daemon, 'other');
    console.log(
      `session-ids: ${refusals.length} requests with . or .. refused ("${refusals[0]}"); closing "..." removed ${closed.removedFiles} file, ` +
        `another session's spill file, the token, the lock and the journal stayed`,
    );
  });

  it('maps every id to a direct child of the spill root', () => {
    for (const id of ['s1', '...', 'a.b:c-d_e']) expect(sessionDirName(id)).toBe(id);
    for (const id of ['.', '..', '../x', 'a/b', '', 'a\u0000b']) {
      const name = sessionDirName(id);
      expect(name).toMatch(/^=[0-9a-f]{64}$/);
    }
    expect(sessionDirName('..')).not.toBe(sessionDirName('.'));
  });

  it('never writes into nor deletes through a symlink planted for a session directory', async () => {
    const daemon = await startDaemon({ config: { maxOutputBytes: 1000 } });
    const victim = victimDir(daemon);
    mkdirSync(join(daemon.stateDir, 'spill'), { recursive: true, mode: 0o700 });
    symlinkSync(victim, join(daemon.stateDir, 'spill', 's1'));
    const client = await daemon.session('s1');

    const run = await client.run({ sessionId: 's1', command: 'seq 1 10000' });
    expect(run.exitCode).toBe(0);
    expect(run.stdout.text.endsWith('\n10000\n')).toBe(true);
    expect(run.stdout.spillPath).toBeUndefined();
    expect(run.stdout.saveError).toMatch(/is not a directory \(a symlink is never followed\)/);
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'echo job-out; echo job-err >&2' });
    const job = await waitJob(client, 's1', jobId);
    expect(job.status).toBe('completed');
    expect((await client.call(JobRead, { sessionId: 's1', jobId })).delta).toBe('job-out\n[stderr]\njob-err\n');
    expect(readdirSync(victim)).toEqual(['precious']);

    const closed = await client.call(SessionClose, { sessionId: 's1' });
    expect(readdirSync(victim)).toEqual(['precious']);
    expect(readFileSync(join(victim, 'precious'), 'utf8')).toBe('precious');
    // The link itself is gone; what it pointed to is not.
    expect(() => lstatSync(join(daemon.stateDir, 'spill', 's1'))).toThrow(/ENOENT/);
    await expectServedByNewClient(daemon, 'other');
    console.log(
      `session-ids: with spill/s1 a symlink to a victim dir, a run answered its tail ("${run.stdout.saveError}"), a job completed with its output in memory, ` +
        `session close removed ${closed.removedFiles} files; the victim dir still holds exactly ${JSON.stringify(readdirSync(victim))}`,
    );
  });

  it('never sweeps, writes into nor deletes through a symlink planted for the spill root', async () => {
    const base = mkdtempSync(join(tmpdir(), 'execd-spill-root-'));
    onTestFinished(() => rmSync(base, { recursive: true, force: true }));
    const victim = join(base, 'victim');
    mkdirSync(join(victim, 's1'), { recursive: true });
    // Old enough for the retention sweep, and where closing session s1 would delete through the link.
    const old = join(victim, 's1', 'old-file');
    writeFileSync(old, 'old');
    const month = Date.now() / 1000 - 30 * 86_400;
    utimesSync(old, month, month);
    writeFileSync(join(victim, 'precious'), 'precious');
    const stateDir = join(base, 'state');
    mkdirSync(stateDir, { mode: 0o700 });
    symlinkSync(victim, join(stateDir, 'spill'));

    const daemon = await startDaemon({ stateDir, config: { spillRetentionMs: 1000, maxOutputBytes: 1000 } });
    const client = await daemon.session('s1');
    const run = await client.run({ sessionId: 's1', command: 'seq 1 10000' });
    expect(run.stdout.text.endsWith('\n10000\n')).toBe(true);
    expect(run.stdout.saveError).toMatch(/spill is not a directory \(a symlink is never followed\)/);
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'echo out' });
    await waitJob(client, 's1', jobId);
    await client.call(JobRelease, { sessionId: 's1', jobId });
    const closed = await client.call(SessionClose, { sessionId: 's1' });
    expect(readFileSync(old, 'utf8')).toBe('old');
    expect(readdirSync(victim).sort()).toEqual(['precious', 's1']);
    expect(readdirSync(join(victim, 's1'))).toEqual(['old-file']);
    await expectServedByNewClient(daemon, 'other');
    console.log(
      `session-ids: with the spill root a symlink to a victim dir, the start-up sweep (spillRetentionMs=1000) kept a 30-day-old file there, ` +
        `a run answered its tail ("${run.stdout.saveError}"), job release and session close (${closed.removedFiles} files) deleted nothing through it`,
    );
  });

  it("never writes through nor deletes through a symlink planted for a job's log file", async () => {
    const daemon = await startDaemon();
    const victim = victimDir(daemon);
    const client = await daemon.session('s2');
    await client.run({ sessionId: 's2', command: 'seq 1 100000' });
    const dir = join(daemon.stateDir, 'spill', 's2');
    expect(lstatSync(dir).isDirectory()).toBe(true);
    // The first job of a fresh daemon is bash-1: its log names are predictable.
    symlinkSync(join(victim, 'precious'), join(dir, 'bash-1.stdout'));
    symlinkSync(join(victim, 'precious'), join(dir, 'bash-1.stderr'));

    const { jobId } = await client.call(ShellStart, { sessionId: 's2', command: 'echo out; echo err >&2' });
    expect(jobId).toBe('bash-1');
    const job = await waitJob(client, 's2', jobId);
    expect(job.status).toBe('completed');
    expect((await client.call(JobRead, { sessionId: 's2', jobId })).delta).toBe('out\n[stderr]\nerr\n');
    expect(readFileSync(join(victim, 'precious'), 'utf8')).toBe('precious');
    await client.call(JobRelease, { sessionId: 's2', jobId });
    expect(readFileSync(join(victim, 'precious'), 'utf8')).toBe('precious');
    await client.call(SessionClose, { sessionId: 's2' });
    expect(readdirSync(victim)).toEqual(['precious']);
    console.log(
      `session-ids: with bash-1's log files symlinks to a victim file, the job completed (${job.detail}) with its output in memory; ` +
        `after release and session close the victim still reads ${JSON.stringify(readFileSync(join(victim, 'precious'), 'utf8'))}`,
    );
  });
});
