/** Background jobs against a real daemon (SPEC §1.6, §1.7): reads, kills, failures, ownership. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExecdRpcError } from '../../client/connection.js';
import { BACKGROUND_DISABLED_MESSAGE } from '../../protocol/errors.js';
import {
  DaemonStatus,
  JobKill,
  JobList,
  JobPeek,
  JobRead,
  JobRelease,
  JobWait,
  ShellStart,
} from '../../protocol/methods.js';
import { startDaemon, waitPidsGone } from '../helpers/daemon.js';
import { waitJob } from '../helpers/jobs.js';
import { alivePids, pidsIn } from '../helpers/procs.js';
import { waitFor } from '../helpers/wait.js';

/** The error name a call rejects with. */
async function errorOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ExecdRpcError) return error.errorName;
    throw error;
  }
  return 'no error';
}

/** A command that prints its pid and a sleeping child's pid, then waits. */
const TREE = 'echo $$; sleep 300 & echo $!; wait';

describe('background jobs', () => {
  it('delivers every byte exactly once over repeated reads while the job runs, and only new bytes after', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    // Halfway, the job waits for a flag the reader sets once it saw line 500: some reads happen while it runs.
    const flag = join(daemon.dir, 'half');
    const command =
      'for i in $(seq 1 1000); do echo $i; if (( i % 20 == 0 )); then sleep 0.005; fi; ' +
      `if (( i == 500 )); then while [ ! -e ${flag} ]; do sleep 0.01; done; fi; done`;
    const started = await client.call(ShellStart, { sessionId: 's1', command });
    expect(started.jobId).toMatch(/^bash-\d+$/);
    expect(started.pid).toBeGreaterThan(0);
    let text = '';
    let reads = 0;
    let readsWhileRunning = 0;
    for (;;) {
      const read = await client.call(JobRead, { sessionId: 's1', jobId: started.jobId });
      reads += 1;
      text += read.delta;
      expect(read.lossy).toBe(false);
      if (read.job.status !== 'running') {
        expect(read.job).toMatchObject({ status: 'completed', detail: 'exit code: 0', stdoutBytes: text.length });
        break;
      }
      if (read.delta.length > 0) readsWhileRunning += 1;
      if (text.endsWith('\n500\n')) writeFileSync(flag, '');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const expected = Array.from({ length: 1000 }, (_, i) => `${i + 1}\n`).join('');
    expect(text).toBe(expected);
    expect(readsWhileRunning).toBeGreaterThanOrEqual(1);
    const after = await client.call(JobRead, { sessionId: 's1', jobId: started.jobId });
    expect(after.delta).toBe('');
    console.log(
      `read ${expected.length} bytes in ${reads} reads, ${readsWhileRunning} of them non-empty while the job ran`,
    );
  });

  it('puts new stderr in a [stderr] section, with a newline only when stdout does not end with one', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const cases: Array<[string, string]> = [
      ['echo out; echo err >&2', 'out\n[stderr]\nerr\n'],
      ['printf out; printf err >&2', 'out\n[stderr]\nerr'],
      ['echo err >&2', '[stderr]\nerr\n'],
      ['echo only-out', 'only-out\n'],
    ];
    for (const [command, delta] of cases) {
      const { jobId } = await client.call(ShellStart, { sessionId: 's1', command });
      await waitJob(client, 's1', jobId);
      expect((await client.call(JobRead, { sessionId: 's1', jobId })).delta).toBe(delta);
    }
  });

  it('marks a read lossy when the reader fell behind the window, and names a log file with the whole stream', async () => {
    const daemon = await startDaemon({ config: { maxOutputBytes: 1000 } });
    const client = await daemon.session('s1');
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'seq 1 20000; seq 1 3000 >&2' });
    await waitJob(client, 's1', jobId);
    const read = await client.call(JobRead, { sessionId: 's1', jobId });
    const fullOut = Array.from({ length: 20000 }, (_, i) => `${i + 1}\n`).join('');
    const fullErr = Array.from({ length: 3000 }, (_, i) => `${i + 1}\n`).join('');
    expect(read.lossy).toBe(true);
    expect(readFileSync(read.stdoutSpillPath!, 'utf8')).toBe(fullOut);
    expect(readFileSync(read.stderrSpillPath!, 'utf8')).toBe(fullErr);
    const [out, err] = read.delta.split('[stderr]\n');
    expect(fullOut.endsWith(out!)).toBe(true);
    expect(fullErr.endsWith(err!)).toBe(true);
    expect(Buffer.byteLength(out!)).toBeLessThanOrEqual(1000);
    console.log(`lossy read: ${fullOut.length} stdout bytes in the log, ${Buffer.byteLength(out!)} in the delta`);
  });

  it('keeps the tail of a stream whose log file passed maxSpillBytes, lossy and without a path', async () => {
    const daemon = await startDaemon({ config: { maxOutputBytes: 1000, maxSpillBytes: 5000 } });
    const client = await daemon.session('s1');
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'seq 1 20000' });
    await waitJob(client, 's1', jobId);
    const read = await client.call(JobRead, { sessionId: 's1', jobId });
    const full = Array.from({ length: 20000 }, (_, i) => `${i + 1}\n`).join('');
    expect(read.lossy).toBe(true);
    expect(read.stdoutSpillPath).toBeUndefined();
    expect(existsSync(join(daemon.stateDir, 'spill', 's1', `${jobId}.stdout`))).toBe(false);
    expect(full.endsWith(read.delta)).toBe(true);
    expect(read.delta.endsWith('20000\n')).toBe(true);
  });

  it('shows stdout in the log file and in reads as soon as the running process writes it', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'echo first; sleep 300' });
    const log = join(daemon.stateDir, 'spill', 's1', `${jobId}.stdout`);
    await waitFor(() => existsSync(log) && readFileSync(log, 'utf8') === 'first\n', 'the line in the log file');
    const read = await client.call(JobRead, { sessionId: 's1', jobId });
    expect(read.delta).toBe('first\n');
    expect(read.job.status).toBe('running');
    expect(read.job.stdoutBytes).toBe(6);
    await client.call(JobKill, { sessionId: 's1', jobId });
  });

  it('keeps a settled job at its answered output while a leftover descendant writes on', async () => {
    const daemon = await startDaemon({ config: { graceMs: 300 } });
    const client = await daemon.session('s1');
    const command = 'echo done; (sleep 1; echo late; echo $BASHPID > leftover.pid) &';
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command, workdir: daemon.dir });
    const job = await waitJob(client, 's1', jobId);
    expect(job.stdoutBytes).toBe(5);
    const pidFile = join(daemon.dir, 'leftover.pid');
    await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '', 'the leftover to write');
    expect(await waitPidsGone([Number(readFileSync(pidFile, 'utf8'))])).toEqual([]);
    const log = join(daemon.stateDir, 'spill', 's1', `${jobId}.stdout`);
    await waitFor(() => readFileSync(log, 'utf8') === 'done\n', 'the log to be cut back to the answered output');
    const read = await client.call(JobRead, { sessionId: 's1', jobId });
    expect(read.delta).toBe('done\n');
  });

  it('kills the whole tree: status killed, detail names the signal, a second kill says false', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: TREE });
    const peeked = await waitFor(async () => {
      const peek = await client.call(JobPeek, { sessionId: 's1', jobId });
      return pidsIn(peek.stdout.text).length === 2 ? peek : undefined;
    }, 'the job to print its pids');
    const pids = pidsIn(peeked.stdout.text);
    expect(peeked.job.status).toBe('running');
    expect(await client.call(JobKill, { sessionId: 's1', jobId })).toEqual({ killed: true });
    expect(alivePids(pids)).toEqual([]);
    const job = await client.call(JobWait, { sessionId: 's1', jobId });
    expect(job).toMatchObject({ status: 'killed', detail: 'signal: SIGTERM', signal: 'SIGTERM', exitCode: null });
    expect(job.finishedAt).toBeDefined();
    expect(await client.call(JobKill, { sessionId: 's1', jobId })).toEqual({ killed: false });
  });

  it('settles a job whose spawn failed as failed with spawn failed, never killed', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const workdir = join(daemon.dir, 'no-such-dir');
    const { jobId, pid } = await client.call(ShellStart, { sessionId: 's1', command: 'echo hi', workdir });
    expect(pid).toBe(0);
    const job = await waitJob(client, 's1', jobId);
    expect(job.status).toBe('failed');
    expect(job.detail).toBe(`spawn failed: workdir does not exist: ${workdir}`);
  });

  it('reports exit 7 as completed with detail exit code: 7', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'exit 7' });
    expect(await waitJob(client, 's1', jobId)).toMatchObject({
      status: 'completed',
      detail: 'exit code: 7',
      exitCode: 7,
      signal: null,
    });
  });

  it("refuses every method on another session's job (FORBIDDEN) and unknown ids (JOB_NOT_FOUND)", async () => {
    const daemon = await startDaemon();
    const owner = await daemon.session('A');
    const other = await daemon.session('B');
    const { jobId } = await owner.call(ShellStart, { sessionId: 'A', command: 'sleep 300' });
    const asB = { sessionId: 'B', jobId };
    expect(await errorOf(other.call(JobRead, asB))).toBe('FORBIDDEN');
    expect(await errorOf(other.call(JobPeek, asB))).toBe('FORBIDDEN');
    expect(await errorOf(other.call(JobWait, { ...asB, timeoutMs: 10 }))).toBe('FORBIDDEN');
    expect(await errorOf(other.call(JobKill, asB))).toBe('FORBIDDEN');
    expect(await errorOf(other.call(JobRelease, asB))).toBe('FORBIDDEN');
    // Naming the owner session without having opened it is no way around that.
    expect(await errorOf(other.call(JobRead, { sessionId: 'A', jobId }))).toBe('SESSION_NOT_FOUND');
    expect(await errorOf(other.call(JobList, { sessionId: 'A' }))).toBe('SESSION_NOT_FOUND');
    expect(await errorOf(owner.call(JobRead, { sessionId: 'A', jobId: 'bash-999999' }))).toBe('JOB_NOT_FOUND');
    expect(await errorOf(owner.call(JobKill, { sessionId: 'A', jobId: 'bash-999999' }))).toBe('JOB_NOT_FOUND');
    const still = await owner.call(JobWait, { sessionId: 'A', jobId, timeoutMs: 10 });
    expect(still.status).toBe('running');
    expect((await other.call(JobList, { sessionId: 'B' })).map((job) => job.id)).toEqual([]);
    expect((await other.call(JobList, { all: true })).map((job) => job.id)).toEqual([jobId]);
  });

  it('refuses shell/start with BACKGROUND_DISABLED when background runs are off', async () => {
    const daemon = await startDaemon({ config: { enableRunInBackground: false } });
    const client = await daemon.session('s1');
    const refused = await client
      .call(ShellStart, { sessionId: 's1', command: 'true' })
      .catch((error: ExecdRpcError) => error);
    expect(refused).toBeInstanceOf(ExecdRpcError);
    expect((refused as ExecdRpcError).errorName).toBe('BACKGROUND_DISABLED');
    expect((refused as ExecdRpcError).message).toBe(BACKGROUND_DISABLED_MESSAGE);
    expect(await client.call(JobList, { all: true })).toEqual([]);
  });

  it('refuses a job past maxJobsPerSession with LIMIT_EXCEEDED naming the limit, other sessions unaffected', async () => {
    const daemon = await startDaemon({ config: { maxJobsPerSession: 2 } });
    const client = await daemon.session('s1');
    for (let i = 0; i < 2; i++) await client.call(ShellStart, { sessionId: 's1', command: 'sleep 300' });
    const refused = await client
      .call(ShellStart, { sessionId: 's1', command: 'sleep 300' })
      .catch((error: ExecdRpcError) => error);
    expect((refused as ExecdRpcError).errorName).toBe('LIMIT_EXCEEDED');
    expect((refused as ExecdRpcError).message).toBe('maxJobsPerSession limit reached (2)');
    const other = await daemon.session('s2');
    await other.call(ShellStart, { sessionId: 's2', command: 'true' });
    const status = await client.call(DaemonStatus, {});
    expect(status.sessions.find((session) => session.sessionId === 's1')?.runningJobs).toBe(2);
    expect(status.jobs.running + status.jobs.settled).toBe(3);
  });

  it('holds back a character split across writes until it is complete', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const flag = join(daemon.dir, 'go');
    const command = `printf 'a\\xe2\\x82'; while [ ! -e ${flag} ]; do sleep 0.02; done; printf '\\xac\\n'`;
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command });
    await waitFor(
      async () => (await client.call(JobWait, { sessionId: 's1', jobId, timeoutMs: 1 })).stdoutBytes === 3,
      '3 bytes',
    );
    expect((await client.call(JobRead, { sessionId: 's1', jobId })).delta).toBe('a');
    expect((await client.call(JobPeek, { sessionId: 's1', jobId })).stdout).toEqual({
      text: 'a',
      offset: 0,
      nextOffset: 1,
      lossy: false,
    });
    expect((await client.call(JobRead, { sessionId: 's1', jobId })).delta).toBe('');
    writeFileSync(flag, '');
    await waitJob(client, 's1', jobId);
    expect((await client.call(JobRead, { sessionId: 's1', jobId })).delta).toBe('€\n');
  });

  it('peeks at offsets without consuming what a read will deliver', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'echo hello; echo world >&2' });
    await waitJob(client, 's1', jobId);
    const peek = await client.call(JobPeek, { sessionId: 's1', jobId, stdoutOffset: 2 });
    expect(peek.stdout).toEqual({ text: 'llo\n', offset: 2, nextOffset: 6, lossy: false });
    expect(peek.stderr).toEqual({ text: 'world\n', offset: 0, nextOffset: 6, lossy: false });
    const atEnd = await client.call(JobPeek, { sessionId: 's1', jobId, stdoutOffset: 6, stderrOffset: 6 });
    expect(atEnd.stdout.text + atEnd.stderr.text).toBe('');
    expect((await client.call(JobRead, { sessionId: 's1', jobId })).delta).toBe('hello\n[stderr]\nworld\n');
  });

  it('releases a job: kills it, forgets it, deletes its files', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: TREE });
    const logFile = join(daemon.stateDir, 'spill', 's1', `${jobId}.stdout`);
    const text = await waitFor(async () => {
      const peek = await client.call(JobPeek, { sessionId: 's1', jobId });
      return pidsIn(peek.stdout.text).length === 2 ? peek.stdout.text : undefined;
    }, 'the pids');
    expect(existsSync(logFile)).toBe(true);
    expect(await client.call(JobRelease, { sessionId: 's1', jobId })).toEqual({ released: true });
    expect(alivePids(pidsIn(text))).toEqual([]);
    expect(existsSync(logFile)).toBe(false);
    expect(await errorOf(client.call(JobRead, { sessionId: 's1', jobId }))).toBe('JOB_NOT_FOUND');
  });
});
