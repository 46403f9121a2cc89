/**
 * A restart that keeps the work (SPEC §14), with real daemons on one state dir: `execd stop
 * --keep-jobs` leaves running jobs running (inline and spawner-spawned alike), the next daemon
 * adopts them — listed running, every line read exactly once across the restart, killable — and
 * closes terminals with a reason; a plain stop still kills every job.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import {
  DaemonShutdown,
  DaemonStatus,
  JobKill,
  JobList,
  JobPeek,
  JobRead,
  JobWait,
  ShellStart,
  TerminalList,
  TerminalOpen,
} from '../../protocol/methods.js';
import { TERMINALS_DO_NOT_SURVIVE } from '../../daemon/runs/active-runs.js';
import { ADOPTED_ENDED_DETAIL } from '../../daemon/jobs/settlement.js';
import { CLI, startDaemon, waitPidsGone, type TestDaemon } from '../helpers/daemon.js';
import { pidAlive } from '../helpers/procs.js';
import { rejection } from '../helpers/rejection.js';
import { waitFor } from '../helpers/wait.js';

/** A job that writes a numbered line every 100 ms, on stdout and on stderr. */
const COUNTER = 'i=0; while :; do i=$((i+1)); echo "line $i"; echo "err $i" >&2; sleep 0.1; done';

/** Runs the built `execd stop ARGS` against `daemon`; resolves with its exit code and stdout. */
function cliStop(daemon: TestDaemon, args: string[]): Promise<{ code: number | null; stdout: string }> {
  const env = { ...process.env, EXECD_SOCKET: daemon.socketPath, EXECD_STATE_DIR: daemon.stateDir };
  const child = spawn(process.execPath, [CLI, 'stop', ...args], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout })));
}

/** Runs the built `execd ARGS` against `daemon`; resolves with its exit code, stdout and stderr. */
function cli(daemon: TestDaemon, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = { ...process.env, EXECD_SOCKET: daemon.socketPath, EXECD_STATE_DIR: daemon.stateDir };
  const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

/** The numbers of `prefix N` lines in `text`, in order. */
function numbers(text: string, prefix: string): number[] {
  return [...text.matchAll(new RegExp(`^${prefix} (\\d+)$`, 'gm'))].map((match) => Number(match[1]));
}

/** True when `list` is 1, 2, …, n. */
function consecutive(list: number[]): boolean {
  return list.every((n, index) => n === index + 1);
}

describe('execd stop --keep-jobs', { timeout: 90_000 }, () => {
  it('leaves running jobs running; the next daemon adopts them: running, read once across the restart, killable', async () => {
    const first = await startDaemon();
    const client = await first.session('s1');
    // The second job starts while the first runs: a spawner process spawns it (it must let it go).
    const jobs = [];
    for (let index = 0; index < 2; index++)
      jobs.push(await client.call(ShellStart, { sessionId: 's1', command: COUNTER }));
    expect((await client.call(DaemonStatus, {})).spawns).toEqual({ inline: 1, spawner: 1 });
    const terminal = await client.call(TerminalOpen, { sessionId: 's1' });
    for (const { jobId } of jobs) {
      await waitFor(
        async () => (await client.call(JobPeek, { sessionId: 's1', jobId })).stdout.text.includes('line 3\n'),
        `${jobId} to count to 3`,
      );
    }
    // Consuming reads before the stop: what they got must not come again after it.
    const before = await Promise.all(jobs.map(({ jobId }) => client.call(JobRead, { sessionId: 's1', jobId })));
    const stopped = await cliStop(first, ['--keep-jobs']);
    expect(stopped.code).toBe(0);
    expect(stopped.stdout).toContain('running jobs left running for the next daemon');
    await first.stop();
    const pids = jobs.map((job) => job.pid);
    const stoppedAt = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 500));
    console.log(`job pids ${pids.join(', ')} alive 500 ms after the daemon exited: ${pids.map(pidAlive).join(', ')}`);
    expect(pids.filter(pidAlive)).toEqual(pids);

    const second = await startDaemon({ stateDir: first.stateDir, socketPath: first.socketPath });
    const after = await second.session('s1');
    console.log(`second daemon answering ${Math.round(performance.now() - stoppedAt)} ms after the first exited`);
    const listed = await after.call(JobList, { sessionId: 's1' });
    expect(listed.map((job) => [job.id, job.status, job.pid])).toEqual(
      jobs.map((job) => [job.jobId, 'running', job.pid]),
    );
    const [firstJob] = jobs;
    // It is still writing, and this daemon reads what it writes now.
    await waitFor(async () => {
      const peek = await after.call(JobPeek, { sessionId: 's1', jobId: firstJob!.jobId });
      return numbers(peek.stdout.text, 'line').length > numbers(before[0]!.delta, 'line').length + 5;
    }, 'the job to write after the restart');
    const middle = await Promise.all(jobs.map(({ jobId }) => after.call(JobRead, { sessionId: 's1', jobId })));

    const notices: string[] = [];
    const subscription = after.onJobExited(({ job }) => notices.push(`${job.id} ${job.status}`));
    for (const { jobId } of jobs)
      expect(await after.call(JobKill, { sessionId: 's1', jobId })).toEqual({ killed: true });
    expect(await waitPidsGone(pids)).toEqual([]);
    for (const [index, { jobId }] of jobs.entries()) {
      const settled = await after.call(JobWait, { sessionId: 's1', jobId, timeoutMs: 10_000 });
      expect(settled).toMatchObject({ status: 'killed', exitCode: null });
      const rest = await after.call(JobRead, { sessionId: 's1', jobId });
      const text = before[index]!.delta + middle[index]!.delta + rest.delta;
      const lines = numbers(text, 'line');
      const errs = numbers(text, 'err');
      console.log(
        `${jobId}: ${numbers(before[index]!.delta, 'line').length} lines read before the restart, ${lines.length} in all, ${errs.length} stderr lines; consecutive: ${consecutive(lines)}, ${consecutive(errs)}`,
      );
      expect(consecutive(lines)).toBe(true);
      expect(consecutive(errs)).toBe(true);
      expect(lines.length).toBeGreaterThan(numbers(before[index]!.delta, 'line').length + 5);
    }

    // Adopted jobs are announced like any job.
    await waitFor(() => notices.length === jobs.length, 'a job/exited notice per adopted job');
    subscription.dispose();
    console.log(`job/exited notices after the restart: ${notices.join(', ')}`);
    expect(notices.sort()).toEqual(jobs.map(({ jobId }) => `${jobId} killed`).sort());

    // The terminal did not survive; it says why.
    const terminals = await after.call(TerminalList, { sessionId: 's1' });
    const closed = terminals.find((entry) => entry.id === terminal.terminal.id);
    console.log(`terminal after the restart: ${closed?.status} (${closed?.detail})`);
    expect(closed).toMatchObject({ status: 'exited', detail: TERMINALS_DO_NOT_SURVIVE });
  });

  it('a keyed shell/start repeated after the restart answers its job again and starts nothing', async () => {
    const first = await startDaemon();
    const client = await first.session('s1');
    const params = { sessionId: 's1', command: 'exec sleep 300', requestKey: 'start-1' };
    const started = await client.call(ShellStart, params);
    await client.call(DaemonShutdown, { keepJobs: true });
    // A SIGTERM right after the answer, maybe before the keepJobs shutdown started, does not undo it.
    await first.stop();
    const second = await startDaemon({ stateDir: first.stateDir, socketPath: first.socketPath });
    const after = await second.session('s1');
    const again = await after.call(ShellStart, params);
    const listed = await after.call(JobList, { sessionId: 's1' });
    console.log(`repeat after the restart: ${again.jobId} (first ${started.jobId}), ${listed.length} job(s) listed`);
    expect(again).toEqual(started);
    expect(listed.map((job) => [job.id, job.status])).toEqual([[started.jobId, 'running']]);
    const other = await rejection(after.call(ShellStart, { ...params, command: 'exec sleep 301' }));
    expect(other.errorName).toBe('INVALID_PARAMS');
    expect(other.message).toContain('requestKey reused with other params');
    expect(await after.call(JobKill, { sessionId: 's1', jobId: started.jobId })).toEqual({ killed: true });
    expect(await waitPidsGone([started.pid])).toEqual([]);
  });

  it('execd read, wait and kill reach an adopted job before anyone opens its session again, and create none', async () => {
    const first = await startDaemon();
    const client = await first.session('s1');
    const job = await client.call(ShellStart, { sessionId: 's1', command: 'echo before; exec sleep 300' });
    await waitFor(
      async () => (await client.call(JobPeek, { sessionId: 's1', jobId: job.jobId })).stdout.text === 'before\n',
      'the job to print',
    );
    await client.call(DaemonShutdown, { keepJobs: true });
    await first.stop();
    const second = await startDaemon({ stateDir: first.stateDir, socketPath: first.socketPath });
    const read = await cli(second, ['read', job.jobId, '--session', 's1']);
    expect(read).toMatchObject({ code: 0, stdout: 'before\n' });
    // A job the daemon does not hold for that session is still the missing session, named.
    const other = await cli(second, ['read', 'bash-99', '--session', 's1']);
    expect(other.code).not.toBe(0);
    expect(other.stderr).toContain('no session s1 in the daemon');
    const typo = await cli(second, ['read', job.jobId, '--session', 's2']);
    expect(typo.code).not.toBe(0);
    expect(typo.stderr).toContain('no session s2 in the daemon');
    const killed = await cli(second, ['kill', job.jobId, '--session', 's1']);
    expect(killed.code).toBe(0);
    expect(await waitPidsGone([job.pid])).toEqual([]);
    const waited = await cli(second, ['wait', job.jobId, '--session', 's1']);
    // Killed by a signal: 128+n (an adopted job's group may get SIGKILL at once).
    expect([128 + 15, 128 + 9]).toContain(waited.code);
    // Looking and killing created no session: the daemon has none.
    const status = await (await second.connect()).call(DaemonStatus, {});
    expect(status.sessions.map((entry) => entry.sessionId)).toEqual([]);
  });

  it('a plain stop still kills every job, and the next daemon lists it killed', async () => {
    const first = await startDaemon();
    const client = await first.session('s1');
    const job = await client.call(ShellStart, { sessionId: 's1', command: COUNTER });
    await client.call(DaemonShutdown, {});
    await first.stop();
    expect(await waitPidsGone([job.pid])).toEqual([]);
    const second = await startDaemon({ stateDir: first.stateDir, socketPath: first.socketPath });
    const after = await second.session('s1');
    const [listed] = await after.call(JobList, { sessionId: 's1' });
    console.log(`after a plain stop: ${listed?.status} (${listed?.detail})`);
    expect(listed).toMatchObject({ id: job.jobId, status: 'killed' });
  });

  it('a kept job that ended while no daemon ran reads lost, with no exit code, never completed', async () => {
    const first = await startDaemon();
    const client = await first.session('s1');
    const job = await client.call(ShellStart, { sessionId: 's1', command: 'sleep 1' });
    await client.call(DaemonShutdown, { keepJobs: true });
    await first.stop();
    expect(await waitPidsGone([job.pid])).toEqual([]);
    const second = await startDaemon({ stateDir: first.stateDir, socketPath: first.socketPath });
    const after = await second.session('s1');
    const [listed] = await after.call(JobList, { sessionId: 's1' });
    console.log(`a kept job that ended unseen: ${listed?.status} (${listed?.detail})`);
    expect(listed).toMatchObject({ id: job.jobId, status: 'lost', exitCode: null, detail: ADOPTED_ENDED_DETAIL });
  });
});
