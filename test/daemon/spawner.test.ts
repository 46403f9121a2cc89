/**
 * Where children are spawned (daemon/executor/spawner.ts): on the event loop while nothing else
 * runs, in the spawner process while another child is alive — and runs behave the same either way.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { HELPER_IDLE_MS } from '../../daemon/host/idle-release.js';
import { DaemonStatus, JobKill, JobRead, ShellStart } from '../../protocol/methods.js';
import { startDaemon, waitPidsGone, type TestDaemon } from '../helpers/daemon.js';
import { waitJob } from '../helpers/jobs.js';
import { pidsIn, spawnerProcesses } from '../helpers/procs.js';
import { waitFor } from '../helpers/wait.js';

/** The daemon's spawn counters. */
async function spawns(daemon: TestDaemon): Promise<{ inline: number; spawner: number }> {
  const client = await daemon.connect();
  try {
    return (await client.call(DaemonStatus, {})).spawns;
  } finally {
    client.close();
  }
}

/** A daemon with a background job alive, so that every further spawn goes to the spawner process. */
async function busyDaemon(config: Record<string, unknown> = {}) {
  const daemon = await startDaemon({ config });
  const client = await daemon.session('s1');
  const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'sleep 300' });
  return { daemon, client, jobId };
}

describe('spawner', () => {
  it('keeps no spawner process while idle; the first child starts one for the spawns that overlap it', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    expect(spawnerProcesses(daemon.pid)).toEqual([]);
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'sleep 300' });
    await waitFor(() => spawnerProcesses(daemon.pid).length === 1, 'a spawner process');
    expect((await client.run({ sessionId: 's1', command: 'echo hi' })).stdout.text).toBe('hi\n');
    expect(await spawns(daemon)).toEqual({ inline: 1, spawner: 1 });
    await client.call(JobKill, { sessionId: 's1', jobId });
  });

  it('lets its spawner process go HELPER_IDLE_MS after the last child ended, and starts one again when needed', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'sleep 300' });
    await waitFor(() => spawnerProcesses(daemon.pid).length === 1, 'a spawner process');
    const [first] = spawnerProcesses(daemon.pid);
    // Still needed while the job lives, however long.
    await sleep(HELPER_IDLE_MS + 500);
    expect(spawnerProcesses(daemon.pid).map((stat) => stat.pid)).toEqual([first!.pid]);
    await client.call(JobKill, { sessionId: 's1', jobId });
    await waitJob(client, 's1', jobId);
    const ended = Date.now();
    expect(await waitPidsGone([first!.pid], HELPER_IDLE_MS + 5_000)).toEqual([]);
    expect(Date.now() - ended).toBeGreaterThanOrEqual(HELPER_IDLE_MS - 100);
    // Gone by choice: no run or job failed, and the next overlap gets a new spawner.
    const again = await client.call(ShellStart, { sessionId: 's1', command: 'sleep 300' });
    expect((await client.run({ sessionId: 's1', command: 'echo hi' })).stdout.text).toBe('hi\n');
    expect(spawnerProcesses(daemon.pid)).toHaveLength(1);
    expect(await spawns(daemon)).toEqual({ inline: 2, spawner: 1 });
    await client.call(JobKill, { sessionId: 's1', jobId: again.jobId });
  });

  it('spawns on the event loop while nothing else runs', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    for (let i = 0; i < 3; i++)
      expect((await client.run({ sessionId: 's1', command: 'echo hi' })).stdout.text).toBe('hi\n');
    expect(await spawns(daemon)).toEqual({ inline: 3, spawner: 0 });
  });

  it('spawns in the spawner process while another child is alive, with the same exit facts, streams and stdin', async () => {
    const { daemon, client } = await busyDaemon();
    const result = await client.run({ sessionId: 's1', command: 'cat; echo oops >&2; exit 3', stdin: 'fed\n' });
    expect(result.stdout).toEqual({ text: 'fed\n', truncated: false });
    expect(result.stderr.text).toBe('oops\n');
    expect(result.exitCode).toBe(3);
    expect(await spawns(daemon)).toEqual({ inline: 1, spawner: 1 });
  });

  it('answers many fast concurrent runs of the spawner process, each with its own output', async () => {
    const { daemon, client } = await busyDaemon();
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => client.run({ sessionId: 's1', command: `echo run-${i}` })),
    );
    expect(results.map((result) => result.stdout.text)).toEqual(Array.from({ length: 40 }, (_, i) => `run-${i}\n`));
    expect((await spawns(daemon)).spawner).toBeGreaterThan(0);
  });

  it('streams output relayed by the spawner in chunks that concatenate to exactly the stdout', async () => {
    const { daemon, client } = await busyDaemon();
    let streamed = '';
    const result = await client.run(
      { sessionId: 's1', command: 'for i in $(seq 1 200); do echo "line $i"; done' },
      { onOutput: (progress) => (streamed += progress.stream === 'stdout' ? progress.text : '') },
    );
    const expected = Array.from({ length: 200 }, (_, i) => `line ${i + 1}\n`).join('');
    expect(result.stdout.text).toBe(expected);
    expect(streamed).toBe(expected);
    expect((await spawns(daemon)).spawner).toBe(1);
  });

  it('hands every pipe over intact to many concurrent streamed runs and jobs of the spawner process', async () => {
    const { daemon, client } = await busyDaemon();
    // Pipes are handed over one at a time: the later ones wait while their commands write (and
    // some exit) — nothing they wrote meanwhile may be lost.
    const streamed: string[] = Array.from({ length: 12 }, () => '');
    const command = (i: number) => `head -c 100000 /dev/zero | tr '\\0' ${'abcdefghijkl'[i]}; echo; echo err-${i} >&2`;
    const jobs = await Promise.all(
      Array.from({ length: 4 }, (_, i) => client.call(ShellStart, { sessionId: 's1', command: command(i) })),
    );
    const results = await Promise.all(
      streamed.map((_, i) =>
        client.run(
          { sessionId: 's1', command: command(i), stdoutMaxBytes: 200_000 },
          { onOutput: ({ stream, text }) => (streamed[i] += stream === 'stdout' ? text : '') },
        ),
      ),
    );
    results.forEach((result, i) => {
      const expected = `${'abcdefghijkl'[i]!.repeat(100_000)}\n`;
      expect(streamed[i]).toBe(expected);
      expect(result.stdout.text).toBe(expected);
      expect(result.stderr.text).toBe(`err-${i}\n`);
    });
    for (const [i, job] of jobs.entries()) {
      const settled = await waitJob(client, 's1', job.jobId);
      expect(settled.stderrBytes).toBe(`err-${i}\n`.length);
    }
    expect((await spawns(daemon)).spawner).toBeGreaterThanOrEqual(12);
  });

  it('times out a run of the spawner process: the whole tree is killed and gone', async () => {
    const { daemon, client } = await busyDaemon();
    const result = await client.run({ sessionId: 's1', command: 'echo $$; sleep 30 & echo $!; wait', timeoutMs: 300 });
    expect(result.timedOut).toBe(true);
    expect(result.signal).toBe('SIGTERM');
    const pids = pidsIn(result.stdout.text);
    expect(pids).toHaveLength(2);
    expect(await waitPidsGone(pids)).toEqual([]);
    expect((await spawns(daemon)).spawner).toBe(1);
  });

  it('settles a run of the spawner process about graceMs after bash exits when a descendant holds the pipes', async () => {
    const { client } = await busyDaemon({ graceMs: 500 });
    const result = await client.run({ sessionId: 's1', command: 'sleep 100 >&2 & echo hi' });
    expect(result.stdout.text).toBe('hi\n');
    expect(result.exitCode).toBe(0);
    expect(result.durationMs).toBeGreaterThanOrEqual(450);
    expect(result.durationMs).toBeLessThan(10_000);
  });

  it('runs and kills background jobs of the spawner process, their output read back whole', async () => {
    const { daemon, client, jobId: first } = await busyDaemon();
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'seq 1 1000; echo err >&2' });
    const job = await waitJob(client, 's1', jobId);
    expect(job.exitCode).toBe(0);
    const read = await client.call(JobRead, { sessionId: 's1', jobId });
    const seq = Array.from({ length: 1000 }, (_, i) => `${i + 1}\n`).join('');
    expect(read.delta).toBe(`${seq}[stderr]\nerr\n`);
    expect(await client.call(JobKill, { sessionId: 's1', jobId: first })).toMatchObject({ killed: true });
    expect((await waitJob(client, 's1', first)).status).toBe('killed');
    expect(await spawns(daemon)).toEqual({ inline: 1, spawner: 1 });
  });
});
