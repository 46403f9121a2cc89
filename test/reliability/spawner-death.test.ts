/**
 * Issue 13, point 5: the spawner process holds no output (a child's pipes are handed over to the
 * daemon), so its memory stays bounded whatever a job writes; and its death is honest — its runs
 * and jobs fail naming the cause, their process groups are killed, and a new spawner serves the
 * next spawns.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ExecdRpcError } from '../../client/connection.js';
import { DaemonStatus, JobKill, JobWait, ShellStart } from '../../protocol/methods.js';
import { startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { childrenOf, membersOfGroups } from '../helpers/procs.js';
import { waitFor } from '../helpers/wait.js';

/** Resident memory of a process in MiB (undefined once it is gone). */
function rssMiB(pid: number): number | undefined {
  try {
    const kib = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
    return Math.round(kib / 1024);
  } catch {
    return undefined;
  }
}

/** The pid of the daemon's spawner process. */
function spawnerPid(daemon: TestDaemon): number | undefined {
  return childrenOf(daemon.pid).find((stat) => {
    try {
      return readFileSync(`/proc/${stat.pid}/cmdline`, 'utf8').includes('spawn-worker.js') && stat.state !== 'Z';
    } catch {
      return false;
    }
  })?.pid;
}

/** Live (non-zombie) members of a group. */
const liveMembers = (pgid: number) => membersOfGroups([pgid]).filter((stat) => stat.state !== 'Z');

describe('spawner process', () => {
  it('stays small while a job it spawned writes stderr as fast as it can', async () => {
    // A small log cap: the job's stderr log is deleted past it, so the disk is not filled.
    const daemon = await startDaemon({ config: { maxSpillBytes: 1024 * 1024 } });
    const client = await daemon.session('s');
    // A child alive in the daemon (it also boots the spawner): the next spawn goes to the spawner process.
    const holder = await client.call(ShellStart, { sessionId: 's', command: 'sleep 60' });
    const spawner = await waitFor(() => spawnerPid(daemon), 'the spawner process');
    const flood = await client.call(ShellStart, { sessionId: 's', command: 'yes >&2' });
    expect((await client.call(DaemonStatus, {})).spawns.spawner).toBeGreaterThan(0);
    const before = rssMiB(spawner)!;
    let peak = before;
    const until = Date.now() + 4_000;
    while (Date.now() < until) {
      peak = Math.max(peak, rssMiB(spawner) ?? 0);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const written = (await client.call(JobWait, { sessionId: 's', jobId: flood.jobId, timeoutMs: 1 })).stderrBytes;
    await client.call(JobKill, { sessionId: 's', jobId: flood.jobId });
    await client.call(JobKill, { sessionId: 's', jobId: holder.jobId });
    console.log(
      `spawner RSS under 'yes >&2' for 4 s (${Math.round(written / 1024 / 1024)} MiB of stderr): ` +
        `${before} MiB before, peak ${peak} MiB, ${rssMiB(spawner)} MiB after the kill`,
    );
    // Without back-pressure it grew by hundreds of MiB in seconds; now nothing passes through it.
    expect(peak - before).toBeLessThan(32);
    expect(written).toBeGreaterThan(1024 * 1024);
  });

  it('kill -9 of the spawner: its jobs and runs fail naming the cause, their groups die, a new spawner serves', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s');
    const first = await client.call(ShellStart, { sessionId: 's', command: 'sleep 300' });
    const spawner = await waitFor(() => spawnerPid(daemon), 'the spawner process');
    // Spawned while `first` is alive: by the spawner process.
    const jobs = [
      await client.call(ShellStart, { sessionId: 's', command: 'sleep 300 & sleep 300; echo never' }),
      await client.call(ShellStart, { sessionId: 's', command: 'yes >&2' }),
    ];
    const run = client.run({ sessionId: 's', command: 'sleep 300' });
    await waitFor(async () => (await client.call(DaemonStatus, {})).processes === 4, 'the run to start');
    const spawnedBySpawner = childrenOf(spawner).map((stat) => stat.pid);
    expect(spawnedBySpawner).toEqual(expect.arrayContaining(jobs.map((job) => job.pid)));

    process.kill(spawner, 'SIGKILL');
    const runError = await run.then(
      () => undefined,
      (error: unknown) => error,
    );
    const settled = await Promise.all(
      jobs.map((job) => client.call(JobWait, { sessionId: 's', jobId: job.jobId, timeoutMs: 15_000 })),
    );
    for (const job of settled) {
      expect(job.status).toBe('failed');
      expect(job.detail).toBe('spawner process died (SIGKILL)');
    }
    expect(runError).toBeInstanceOf(ExecdRpcError);
    expect((runError as ExecdRpcError).errorName).toBe('SPAWN_FAILED');
    expect((runError as ExecdRpcError).message).toContain('spawner process died (SIGKILL)');
    for (const pid of [...jobs.map((job) => job.pid), ...spawnedBySpawner]) {
      await waitFor(() => liveMembers(pid).length === 0, `group ${pid} to be gone`);
    }
    // job/kill of a failed job answers false and changes nothing.
    expect((await client.call(JobKill, { sessionId: 's', jobId: jobs[0]!.jobId })).killed).toBe(false);

    // The job the daemon spawned itself is untouched; a new spawner takes the next spawns.
    expect(liveMembers(first.pid).length).toBeGreaterThan(0);
    const replacement = await waitFor(() => spawnerPid(daemon), 'a new spawner process');
    expect(replacement).not.toBe(spawner);
    const result = await client.run({ sessionId: 's', command: 'echo after' });
    expect(result.stdout.text).toBe('after\n');
    const spawnsBefore = (await client.call(DaemonStatus, {})).spawns.spawner;
    const next = await client.call(ShellStart, { sessionId: 's', command: 'echo job-after' });
    const done = await client.call(JobWait, { sessionId: 's', jobId: next.jobId, timeoutMs: 15_000 });
    expect(done.status).toBe('completed');
    expect((await client.call(DaemonStatus, {})).spawns.spawner).toBe(spawnsBefore + 1);
    await client.call(JobKill, { sessionId: 's', jobId: first.jobId });
    console.log(
      `spawner kill -9: 2 jobs failed (${settled[0]!.detail}), the run answered SPAWN_FAILED, ` +
        `${spawnedBySpawner.length} process groups gone; new spawner pid ${replacement}, next run and job worked`,
    );
  });
});
