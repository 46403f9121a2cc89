/**
 * A damaged or hand-edited journal never turns into a kill or a file operation outside the
 * daemon's own (SPEC §5): a running record with pid 1 and init's start time (job or terminal)
 * signals nothing, and a record whose log paths lead outside the spill directory — by name, by
 * `..`, by a symlink or a hard link planted in the spill directory — is neither read by `job/peek`
 * nor deleted by `job/release`.
 */
import { linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sessionDirName } from '../../../daemon/sessions/session-lifecycle.js';
import { JobList, JobPeek, JobRelease } from '../../../protocol/methods.js';
import { startDaemon } from '../../helpers/daemon.js';
import { pidsWithArgument } from '../../helpers/procs.js';
import { rejection } from '../../helpers/rejection.js';
import { waitFor } from '../../helpers/wait.js';

const dirs: string[] = [];

/** Live `sleep ARG` processes (not the shells whose scripts name ARG too). */
function sleepers(arg: string): number[] {
  return pidsWithArgument(arg).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8') === `sleep\0${arg}\0`;
    } catch {
      return false;
    }
  });
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A fresh directory outside every daemon's state dir. */
function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'execd-journal-trust-'));
  dirs.push(dir);
  return dir;
}

/** A journal line of a job record with the given fields over a plausible settled job. */
function jobLine(fields: Record<string, unknown>): string {
  return JSON.stringify({
    t: 'job',
    job: {
      label: 'forged',
      ownerSession: 's1',
      status: 'completed',
      pid: 4242,
      exitCode: 0,
      signal: null,
      // Recent: a settled job past its retention would be released at start-up.
      startedAt: new Date().toISOString(),
      finishedAt: new Date().toISOString(),
      reported: false,
      stdoutBytes: 6,
      stderrBytes: 0,
      cursor: { stdout: 0, stderr: 0 },
      ...fields,
    },
  });
}

/** A journal line of a terminal left open with the given pid and start time. */
function terminalLine(pid: number, startTime: string): string {
  return JSON.stringify({
    op: 'open',
    record: {
      id: 'term-1',
      n: 1,
      sessionId: 's1',
      argv: ['bash'],
      cwd: '/',
      pid,
      procStartTime: `@${startTime}@`,
      cols: 80,
      rows: 24,
      startedAt: '2026-01-01T00:00:00.000Z',
    },
  }).replace(`"@${startTime}@"`, startTime);
}

describe('the journal is verified before any signal or file operation', { timeout: 90_000 }, () => {
  it('a running job and an open terminal recorded with pid 1 and its start time kill nothing (private pid namespace)', async () => {
    const dir = scratch();
    const stateDir = join(dir, 'state');
    mkdirSync(join(stateDir, 'spill', 's1'), { recursive: true, mode: 0o700 });
    // Unique arguments find the canaries from outside the namespace.
    const canary = `1000.${process.pid}${Date.now() % 100_000}`;
    const spill = join(stateDir, 'spill', 's1');
    // Written inside the namespace, where pid 1 is the launcher's bash: its real start time.
    const job = jobLine({
      id: 'bash-1',
      status: 'running',
      finishedAt: undefined,
      exitCode: null,
      pid: 1,
      procStartTime: '@START@',
      stdoutPath: join(spill, 'bash-1.stdout'),
      stderrPath: join(spill, 'bash-1.stderr'),
    }).replace('"@START@"', 'START');
    const terminal = terminalLine(1, 'START');
    writeFileSync(join(dir, 'jobs.template'), `${job}\n`);
    writeFileSync(join(dir, 'terminals.template'), `${terminal}\n`);
    const script = [
      // Session 1 and process group 1 are this bash's: a kill of either reaches the canaries.
      `sleep ${canary} & sleep ${canary} &`,
      `start=$(cut -d' ' -f22 /proc/1/stat)`,
      `sed "s/START/$start/" "${join(dir, 'jobs.template')}" > "${join(stateDir, 'jobs.journal')}"`,
      `sed "s/START/$start/" "${join(dir, 'terminals.template')}" > "${join(stateDir, 'terminals.journal')}"`,
      `"$@"; wait`,
    ].join('\n');
    const daemon = await startDaemon({
      stateDir,
      launcher: [
        'unshare',
        '--pid',
        '--fork',
        '--kill-child',
        '--mount-proc',
        '--',
        'setsid',
        'bash',
        '-c',
        script,
        'bash',
      ],
    });
    expect(sleepers(canary)).toHaveLength(2);
    const client = await daemon.session('s1');
    // Recovery kills in the background: give a kill every chance to land (grace is 2 s by default).
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(sleepers(canary)).toHaveLength(2);
    expect(await client.call(JobList, { sessionId: 's1' })).toEqual([]);
    expect(daemon.stderr()).toContain('dropped a record that failed verification');
    expect(daemon.proc.exitCode).toBeNull();
    // The launcher ignores SIGTERM: its end (SIGKILL) takes the whole namespace with it.
    await daemon.crash();
    // Its processes die with it; reaping the namespace takes a moment under load.
    await waitFor(() => sleepers(canary).length === 0, 'the namespace to take the canaries with it');
  });

  it('log paths outside the spill directory are neither read by job/peek nor deleted by job/release', async () => {
    const dir = scratch();
    const stateDir = join(dir, 'state');
    const spill = join(stateDir, 'spill', sessionDirName('s1'));
    mkdirSync(spill, { recursive: true, mode: 0o700 });
    const victim = join(dir, 'victim.txt');
    writeFileSync(victim, 'secret\n');
    // Planted in the spill directory, each leading to the victim.
    symlinkSync(victim, join(spill, 'bash-3.stdout'));
    linkSync(victim, join(spill, 'bash-4.stdout'));
    const paths: Record<number, string> = {
      1: victim,
      2: join(spill, '..', '..', '..', 'victim.txt'),
      3: join(spill, 'bash-3.stdout'),
      4: join(spill, 'bash-4.stdout'),
    };
    const lines = Object.entries(paths).map(([n, stdoutPath]) =>
      jobLine({ id: `bash-${n}`, stdoutPath, stderrPath: join(spill, `bash-${n}.stderr`) }),
    );
    writeFileSync(join(stateDir, 'jobs.journal'), `${lines.join('\n')}\n`);

    const daemon = await startDaemon({ stateDir });
    const client = await daemon.session('s1');
    expect(await client.call(JobList, { sessionId: 's1' })).toEqual([]);
    for (const n of Object.keys(paths)) {
      const jobId = `bash-${n}`;
      expect((await rejection(client.call(JobPeek, { sessionId: 's1', jobId }))).errorName).toBe('JOB_NOT_FOUND');
      expect((await rejection(client.call(JobRelease, { sessionId: 's1', jobId }))).errorName).toBe('JOB_NOT_FOUND');
    }
    expect(readFileSync(victim, 'utf8')).toBe('secret\n');
    expect(daemon.stderr().match(/dropped a record that failed verification/g)).toHaveLength(4);
  });
});
