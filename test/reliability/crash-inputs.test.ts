/**
 * Issue 13, point 1: no single request crashes the daemon. NUL bytes wherever a string reaches
 * execve or a path, a result text larger than a string can be, and a daemon out of file descriptors
 * are each answered (an error, a `failed` job, or a result that says what could not be saved), and
 * the daemon goes on serving another client.
 */
import { describe, expect, it } from 'vitest';
import {
  ConfigSet,
  JobList,
  JobRead,
  SessionClose,
  SessionOpen,
  ShellResolve,
  ShellRun,
  ShellStart,
} from '../../protocol/methods.js';
import { DEFAULT_CONFIG } from '../../protocol/config.js';
import type { ExecSpec } from '../../protocol/types.js';
import { ProcessRegistry } from '../../daemon/processes/process-registry.js';
import { Spawner } from '../../daemon/executor/spawner.js';
import { runForeground } from '../../daemon/runs/foreground.js';
import { killJob } from '../../daemon/jobs/job-control.js';
import { JobTable } from '../../daemon/jobs/job-table.js';
import { planJobLaunch } from '../../daemon/jobs/launch-plan.js';
import { startJob } from '../../daemon/jobs/start-job.js';
import { createLogger } from '../../daemon/log/logger.js';
import { startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { isSettled } from '../helpers/jobs.js';
import { openFdCount } from '../helpers/procs.js';
import { waitFor } from '../helpers/wait.js';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { rejection } from '../helpers/rejection.js';

/** A spec built by hand below the schema: its command carries a NUL that only spawn refuses. */
function nulSpec(dir: string): ExecSpec {
  return {
    command: 'echo a\u0000b',
    argv: ['bash', '-c', 'echo a\u0000b'],
    workdir: dir,
    timeoutMs: 10_000,
    stdoutMaxBytes: 1000,
    env: { PATH: process.env.PATH ?? '' },
    sandboxPolicy: { mode: 'danger-full-access' },
  };
}

/** A fresh client (a new connection) is served: the daemon is alive and answering. */
async function expectServedByNewClient(daemon: TestDaemon, sessionId = 'bystander'): Promise<void> {
  const client = await daemon.session(sessionId);
  const result = await client.run({ sessionId, command: 'echo next' });
  expect(result.stdout.text).toBe('next\n');
  expect(daemon.proc.exitCode).toBeNull();
}

const NUL = '\u0000';

describe('one request never crashes the daemon', () => {
  it('refuses a NUL byte in every string that reaches execve or a path, naming the field', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const base = { sessionId: 's1', command: 'echo fine' };
    const cases: Array<[string, Promise<unknown>, string]> = [
      ['shell/run command', client.call(ShellRun, { ...base, command: `echo a${NUL}b` }), 'command'],
      ['shell/start command', client.call(ShellStart, { ...base, command: `echo a${NUL}b` }), 'command'],
      ['shell/resolve command', client.call(ShellResolve, { ...base, command: `echo a${NUL}b` }), 'command'],
      ['env value', client.call(ShellRun, { ...base, env: { A: `x${NUL}y` } }), 'env.A'],
      ['env key', client.call(ShellRun, { ...base, env: { [`A${NUL}B`]: 'x' } }), 'env keys'],
      ['dshEnv value', client.call(ShellRun, { ...base, dshEnv: { DSH_A: `x${NUL}` } }), 'dshEnv.DSH_A'],
      ['dshEnv key', client.call(ShellStart, { ...base, dshEnv: { [`DSH_${NUL}`]: 'x' } }), 'dshEnv keys'],
      ['workdir', client.call(ShellStart, { ...base, workdir: `/tmp${NUL}x` }), 'workdir'],
      [
        'sandboxPolicy.workspaceRoot',
        client.call(ShellRun, { ...base, sandboxPolicy: { mode: 'workspace-write', workspaceRoot: `/tmp${NUL}` } }),
        'sandboxPolicy.workspaceRoot',
      ],
      ['session cwd', client.call(SessionOpen, { sessionId: 's2', cwd: `/tmp${NUL}` }), 'cwd'],
      ['config cwd', client.call(ConfigSet, { patch: { cwd: `/tmp${NUL}` } }), 'patch.cwd'],
    ];
    for (const [what, call, field] of cases) {
      const error = await rejection(call);
      expect(error.errorName, what).toBe('INVALID_PARAMS');
      expect(error.message, what).toBe(`${field} must not contain NUL bytes`);
    }
    // stdin is data written to a pipe, not an argument: NUL bytes are delivered as they are.
    const counted = await client.run({ sessionId: 's1', command: 'wc -c', stdin: `a${NUL}b` });
    expect(counted.stdout.text.trim()).toBe('3');
    // No job was left behind by the refused starts.
    expect(await client.call(JobList, { sessionId: 's1' })).toEqual([]);
    await expectServedByNewClient(daemon);
    console.log(
      `crash-inputs: ${cases.length} NUL-bearing requests refused with InvalidParams naming the field; stdin with a NUL counted 3 bytes; the daemon served a new client`,
    );
  });

  it('the executor turns a NUL that reaches spawn into SPAWN_FAILED instead of throwing', async () => {
    // Below the schema: a spec built by hand, run by the real executor with a real spawner.
    const dir = mkdtempSync(join(tmpdir(), 'execd-nul-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const processes = new ProcessRegistry();
    const outcome = await runForeground(nulSpec(dir), {
      config: DEFAULT_CONFIG,
      sessionId: 's1',
      spillPath: (stream) => join(dir, 'spill', `run.${stream}`),
      processes,
      spawner: new Spawner(),
    });
    expect(outcome).toMatchObject({ name: 'SPAWN_FAILED' });
    expect((outcome as { message: string }).message).toMatch(/cannot start bash: .*null bytes/);
    expect(processes.count).toBe(0);
    console.log(`crash-inputs: a NUL in argv below the schema answered ${JSON.stringify(outcome)}`);
  });

  it('a job whose spawn throws below the schema settles failed at once, and kill does not hang', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'execd-nul-job-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const table = new JobTable(
      join(dir, 'jobs.journal'),
      () => {},
      createLogger('silent', { kind: 'stderr' }),
      () => DEFAULT_CONFIG,
      join(dir, 'spill'),
    );
    table.restore(1000);
    onTestFinished(() => table.close());
    const spec = nulSpec(dir);
    const processes = new ProcessRegistry();
    const job = await startJob(spec, planJobLaunch(spec, undefined), 's1', {
      table,
      processes,
      spawner: new Spawner(),
      config: DEFAULT_CONFIG,
      logDir: join(dir, 'spill', 's1'),
      log: createLogger('silent', { kind: 'stderr' }),
    });
    expect(job.status).toBe('failed');
    expect(job.pid).toBe(0);
    expect(job.detail).toMatch(/^spawn failed: cannot start bash: .*null bytes/);
    const started = Date.now();
    expect(await killJob(job, 1000)).toBe(false);
    expect(processes.count).toBe(0);
    console.log(
      `crash-inputs: a job whose spawn threw settled ${job.status} (${job.detail}); job kill answered in ${Date.now() - started} ms`,
    );
  });

  it('refuses stdoutMaxBytes and maxOutputBytes past 8 MiB, and answers 600 MB of output with an 8 MiB tail', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const tooLarge = await rejection(client.run({ sessionId: 's1', command: 'true', stdoutMaxBytes: 700_000_000 }));
    expect(tooLarge.errorName).toBe('INVALID_PARAMS');
    expect(tooLarge.message).toBe('stdoutMaxBytes must be at most 8388608');
    const config = await rejection(client.call(ConfigSet, { patch: { maxOutputBytes: 700_000_000 } }));
    expect(config.message).toBe('patch.maxOutputBytes must be at most 8388608');

    const started = Date.now();
    const result = await client.run({
      sessionId: 's1',
      command: 'yes abcdefghi | head -c 600000000',
      stdoutMaxBytes: 8 * 1024 * 1024,
    });
    const seconds = (Date.now() - started) / 1000;
    expect(result.exitCode).toBe(0);
    expect(result.stdout.truncated).toBe(true);
    // Past maxSpillBytes (64 MiB) the file is gone; the tail is exact.
    expect(result.stdout.spillPath).toBeUndefined();
    expect(result.stdout.text.length).toBeLessThanOrEqual(8 * 1024 * 1024);
    expect(result.stdout.text.length).toBeGreaterThan(8 * 1024 * 1024 - 10);
    expect(result.stdout.text.endsWith('abcdefghi\n')).toBe(true);
    await expectServedByNewClient(daemon);
    console.log(
      `crash-inputs: stdoutMaxBytes 700000000 refused ("${tooLarge.message}"); 600000000 bytes of output answered a ${result.stdout.text.length}-character tail in ${seconds.toFixed(1)} s`,
    );
  });

  it('out of file descriptors (RLIMIT_NOFILE lowered to 12 above its use): starts and runs are answered, nothing crashes, and it serves again', async () => {
    const daemon = await startDaemon({ config: { maxJobsPerSession: 64, maxProcesses: 256 } });
    const client = await daemon.session('s1');
    const baseline = openFdCount(daemon.pid);
    // `ulimit -n` on the running daemon: 12 descriptors left for everything that follows.
    const limit = baseline + 12;
    execFileSync('prlimit', ['--pid', String(daemon.pid), `--nofile=${limit}:${limit}`]);
    // Each running job holds its log files open in the daemon: 40 jobs need more descriptors than it has.
    const outcomes: Array<{ jobId?: string; error?: string }> = [];
    for (let i = 0; i < 40; i++) {
      const started = await client
        .call(ShellStart, { sessionId: 's1', command: 'echo started; sleep 300' })
        .then((job) => ({ jobId: job.jobId }))
        .catch((error: Error) => ({ error: error.message }));
      outcomes.push(started);
    }
    const peak = openFdCount(daemon.pid);
    // A new connection while no descriptor is left: refused at accept, which must not end the daemon.
    const extra = await Promise.race([
      daemon.connect().then(
        (other) => (other.close(), 'connected'),
        (error: Error) => `refused (${error.message})`,
      ),
      new Promise<string>((resolve) => setTimeout(resolve, 5_000, 'still waiting after 5 s')),
    ]);
    // A foreground run while the descriptors are gone: its output comes through pipes.
    const run = await client.run({ sessionId: 's1', command: 'echo through' });
    expect(run.exitCode).toBe(0);
    expect(run.stdout.text).toBe('through\n');
    expect(daemon.proc.exitCode).toBeNull();
    const jobs = await client.call(JobList, { sessionId: 's1' });
    // Every job is either running with a process or settled with a reason: none is stuck without one.
    for (const job of jobs) {
      if (job.status === 'running') expect(job.pid).toBeGreaterThan(0);
      else expect(isSettled(job) && job.detail).toBeTruthy();
    }
    // Jobs started once the descriptors ran out keep their output in memory: they have no log file.
    const reads = await Promise.all(
      jobs
        .filter((job) => job.status === 'running')
        .map(async (job) => {
          let text = '';
          return waitFor(async () => {
            const read = await client.call(JobRead, { sessionId: 's1', jobId: job.id });
            text += read.delta;
            return text === 'started\n' ? read : undefined;
          }, `${job.id} to print started`);
        }),
    );
    const memoryOnly = reads.filter(
      (read) => !existsSync(join(daemon.stateDir, 'spill', 's1', `${read.job.id}.stdout`)),
    ).length;
    expect(memoryOnly).toBeGreaterThan(0);
    const failed = jobs.filter((job) => job.status === 'failed');
    const closed = await client.call(SessionClose, { sessionId: 's1' });
    await expectServedByNewClient(daemon);
    const errors = outcomes.filter((outcome) => outcome.error !== undefined);
    console.log(
      `crash-inputs: RLIMIT_NOFILE ${limit}, daemon fds ${baseline} at rest and ${peak} at the peak; 40 job starts: ` +
        `${outcomes.length - errors.length} answered with a job (${reads.length} running, ${memoryOnly} of them with output in memory only, ${failed.length} failed), ` +
        `${errors.length} refused; a new connection meanwhile: ${extra}; a run meanwhile: exit ${run.exitCode}, stdout ${JSON.stringify(run.stdout.text)}; ` +
        `session close killed ${closed.killedJobs} jobs; a new client was served`,
    );
  });
});
