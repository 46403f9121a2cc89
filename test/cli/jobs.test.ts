/**
 * Background jobs through the built CLI, each step from a separate CLI process: start, read
 * (consuming), read --follow, peek (non-consuming), jobs, wait, kill, release; and `execd stop`
 * killing running jobs (SPEC §4).
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JobSnapshot, ShellStartResult } from '../../protocol/types.js';
import { cliWorld } from '../helpers/cli.js';
import { waitPidsGone } from '../helpers/daemon.js';
import { pidAlive } from '../helpers/procs.js';
import { waitFor } from '../helpers/wait.js';

// Each step is its own CLI process: generous time on a loaded machine.
describe('execd job subcommands', { timeout: 180_000 }, () => {
  it('start prints an id; read returns new output only; peek consumes nothing; read --follow ends with the job', async () => {
    const world = cliWorld();
    const start = await world.run(['start', '--', 'for i in 1 2 3; do echo $i; sleep 0.2; done']);
    expect(start.code).toBe(0);
    expect(start.stdout).toMatch(/^bash-\d+\n$/);
    const job = start.stdout.trim();
    // Peek until the first line is there: peeking consumes nothing, so a read still gets it.
    await waitFor(async () => (await world.run(['peek', job])).stdout.startsWith('1\n'), 'the first line', {
      timeoutMs: 60_000,
    });
    expect((await world.run(['peek', job])).stdout).toMatch(/^1\n/);
    const first = await world.run(['read', job]);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^1\n/);
    const follow = await world.run(['read', '--follow', job]);
    expect(follow).toMatchObject({ code: 0, stderr: '' });
    // Together the reads got every byte exactly once.
    expect(first.stdout + follow.stdout).toBe('1\n2\n3\n');
    expect(await world.run(['read', job])).toMatchObject({ code: 0, stdout: '' });
    // Peek still shows everything the job wrote.
    expect((await world.run(['peek', job])).stdout).toBe('1\n2\n3\n');
  });

  it('read --follow streams while the job runs and exits with its code and marker', async () => {
    const world = cliWorld();
    // The job cannot end before the test has seen its first line streamed.
    const go = join(world.dir, 'go');
    const job = (
      await world.run(['start', '--', `echo begin; until [ -e ${go} ]; do sleep 0.05; done; echo oops >&2; exit 3`])
    ).stdout.trim();
    const follow = world.spawn(['read', '--follow', job]);
    await waitFor(() => follow.stdout().includes('begin\n'), 'streamed job output', { timeoutMs: 60_000 });
    expect(follow.proc.exitCode).toBeNull();
    writeFileSync(go, '');
    const result = await follow.done;
    // stdout to stdout, stderr to stderr, the marker last.
    expect(result).toMatchObject({ code: 3, stdout: 'begin\n', stderr: 'oops\n[exit code: 3]\n' });
    // A plain read of the settled job ends the same way: nothing new, the marker, its code.
    expect(await world.run(['read', job])).toMatchObject({ code: 3, stdout: '', stderr: '[exit code: 3]\n' });
  });

  it("jobs lists real jobs: the session's as a table, --all across sessions, --json", async () => {
    const world = cliWorld();
    const quick = (await world.run(['start', '--', 'exit 3'])).stdout.trim();
    const other = (await world.run(['start', '--session', 'other', '--', 'true'])).stdout.trim();
    expect(await world.run(['wait', quick])).toMatchObject({ code: 3, stdout: `${quick} completed (exit code: 3)\n` });
    const table = await world.run(['jobs']);
    expect(table.stdout).toMatch(/^ID +STATUS +SESSION +PID +STARTED +DETAIL +COMMAND$/m);
    expect(table.stdout).toMatch(new RegExp(`^${quick} +completed +cli +\\d+ .* exit code: 3 +exit 3$`, 'm'));
    expect(table.stdout).not.toContain(other);
    expect((await world.run(['jobs', '--all'])).stdout).toMatch(new RegExp(`^${other} +\\w+ +other `, 'm'));
    const listed = JSON.parse((await world.run(['jobs', '--json'])).stdout) as JobSnapshot[];
    expect(listed.map((job) => job.id)).toEqual([quick]);
  });

  it("wait exits with the job's code (124 while it runs); kill and release work by id", async () => {
    const world = cliWorld();
    const slow = JSON.parse((await world.run(['start', '--json', '--', 'sleep 300'])).stdout) as ShellStartResult;
    expect(await world.run(['wait', '--timeout', '100', slow.jobId])).toMatchObject({
      code: 124,
      stdout: `${slow.jobId} running\n`,
    });
    expect(await world.run(['kill', slow.jobId])).toMatchObject({ code: 0, stdout: `killed ${slow.jobId}\n` });
    expect(pidAlive(slow.pid)).toBe(false);
    expect(await world.run(['wait', slow.jobId])).toMatchObject({
      code: 143,
      stdout: `${slow.jobId} killed (signal: SIGTERM)\n`,
    });
    expect(await world.run(['kill', slow.jobId])).toMatchObject({
      code: 0,
      stdout: `${slow.jobId} had already ended\n`,
    });
    expect(await world.run(['release', slow.jobId])).toMatchObject({ code: 0, stdout: `released ${slow.jobId}\n` });
    const gone = await world.run(['read', slow.jobId]);
    expect(gone.code).toBe(125);
    expect(gone.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('a job of another session is refused on one line; --session reaches it', async () => {
    const world = cliWorld();
    const job = (await world.run(['start', '--session', 'other', '--', 'echo mine'])).stdout.trim();
    // The CLI's own session exists once something ran in it (a look never creates a session).
    expect((await world.run(['run', '--', 'true'])).code).toBe(0);
    const refused = await world.run(['read', job]);
    expect(refused.code).toBe(125);
    expect(refused.stderr).toMatch(/^execd read: .*another session.*\n$/);
    expect((await world.run(['read', '--follow', '--session', 'other', job])).stdout).toBe('mine\n');
  });

  it('stop shuts down gracefully: running jobs are killed and the socket is gone', async () => {
    const world = cliWorld();
    const started = JSON.parse(
      (await world.run(['start', '--json', '--', 'sleep 300 & echo $!; wait'])).stdout,
    ) as ShellStartResult;
    await waitFor(
      async () => /^\d+\n$/.test((await world.run(['peek', started.jobId])).stdout),
      'the job to print its child pid',
      { timeoutMs: 60_000 },
    );
    const child = Number((await world.run(['peek', started.jobId])).stdout);
    const daemons = world.daemonPids();
    expect(daemons).toHaveLength(1);
    expect(await world.run(['stop'])).toMatchObject({ code: 0 });
    expect(existsSync(world.socketPath)).toBe(false);
    expect(await waitPidsGone([started.pid, child, ...daemons])).toEqual([]);
  });
});
