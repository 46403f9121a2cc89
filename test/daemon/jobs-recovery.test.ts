/**
 * The job journal against real daemons (SPEC §5): after `kill -9` a new daemon on the same state
 * dir fails the jobs that were running and kills their processes, keeps settled jobs readable,
 * and continues the ids; a graceful stop leaves killed jobs behind just as readable.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { DAEMON_RESTARTED_DETAIL } from '../../daemon/jobs/settlement.js';
import { DaemonStatus, JobList, JobPeek, JobRead, SessionOpen, ShellStart } from '../../protocol/methods.js';
import { startDaemon, waitPidsGone } from '../helpers/daemon.js';
import { readToEnd, waitJob } from '../helpers/jobs.js';
import { alivePids, pidsIn } from '../helpers/procs.js';
import { waitFor } from '../helpers/wait.js';

/** `bash-<n>` → n. */
const idNumber = (id: string) => Number(id.slice('bash-'.length));

describe('job journal and crash recovery', () => {
  it('after kill -9: running jobs failed, their processes gone, settled output readable, ids continue', async () => {
    const first = await startDaemon();
    const client = await first.session('s1');
    const { jobId: doneId } = await client.call(ShellStart, {
      sessionId: 's1',
      command: 'echo before the crash; seq 1 5000',
    });
    await waitJob(client, 's1', doneId);
    const tree = 'echo $$; sleep 300 & echo $!; wait';
    const running = await Promise.all(
      [1, 2, 3, 4, 5].map(() => client.call(ShellStart, { sessionId: 's1', command: tree })),
    );
    const pids = (
      await Promise.all(
        running.map(({ jobId }) =>
          waitFor(async () => {
            const text = (await client.call(JobPeek, { sessionId: 's1', jobId })).stdout.text;
            return pidsIn(text).length === 2 ? pidsIn(text) : undefined;
          }, `${jobId} to print its pids`),
        ),
      )
    ).flat();
    // The first running job was spawned by the daemon itself (nothing else was alive), the other
    // four by its spawner process.
    expect((await client.call(DaemonStatus, {})).spawns).toEqual({ inline: 2, spawner: 4 });
    await first.crash();
    // The daemon's own children are orphans now, left to the next daemon's recovery; the spawner
    // process kills the groups it started as soon as the daemon is gone.
    const orphans = pids.slice(0, 2);
    expect(alivePids(orphans)).toEqual(orphans);
    expect(await waitPidsGone(pids.slice(2))).toEqual([]);

    const second = await startDaemon({ stateDir: first.stateDir, socketPath: first.socketPath });
    const after = await second.connect();
    const opened = await after.call(SessionOpen, { sessionId: 's1', cwd: second.dir });
    const failed = opened.jobs.filter((job) => job.status === 'failed');
    expect(failed.map((job) => job.id).sort()).toEqual(running.map((job) => job.jobId).sort());
    for (const job of failed) expect(job).toMatchObject({ detail: DAEMON_RESTARTED_DETAIL, reported: false });
    expect(await waitPidsGone(pids)).toEqual([]);

    const expected = `before the crash\n${Array.from({ length: 5000 }, (_, i) => `${i + 1}\n`).join('')}`;
    const read = await after.call(JobRead, { sessionId: 's1', jobId: doneId });
    expect(read.delta).toBe(expected);
    expect(read.job).toMatchObject({ status: 'completed', stdoutBytes: expected.length });
    // The failed jobs' output, written before the crash, is still there too.
    const firstFailed = await after.call(JobRead, { sessionId: 's1', jobId: running[0]!.jobId });
    expect(pidsIn(firstFailed.delta)).toHaveLength(2);

    const { jobId: nextId } = await after.call(ShellStart, { sessionId: 's1', command: 'true' });
    const oldIds = [doneId, ...running.map((job) => job.jobId)].map(idNumber);
    expect(idNumber(nextId)).toBeGreaterThan(Math.max(...oldIds));
    console.log(
      `recovered ${failed.length} interrupted jobs, ${orphans.length} orphaned processes killed by recovery and ${pids.length - orphans.length} by the spawner, read ${expected.length} bytes of a settled job; next id ${nextId}`,
    );
  });

  it('after a graceful stop: jobs that ran were killed, settled and readable, their reader where it was', async () => {
    const first = await startDaemon();
    const client = await first.session('s1');
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'echo started; sleep 300' });
    await waitFor(async () => (await client.call(JobRead, { sessionId: 's1', jobId })).delta === 'started\n', 'output');
    expect(await first.stop()).toBe(0);

    const second = await startDaemon({ stateDir: first.stateDir, socketPath: first.socketPath });
    const after = await second.session('s1');
    const [job] = await after.call(JobList, { sessionId: 's1' });
    expect(job).toMatchObject({ id: jobId, status: 'killed', detail: 'signal: SIGTERM' });
    // The cursor survived: the line read before the stop is not delivered again.
    expect((await readToEnd(after, 's1', jobId)).text).toBe('');
    expect((await after.call(JobPeek, { sessionId: 's1', jobId })).stdout.text).toBe('started\n');
  });

  it('after kill -9: the next daemon ends the foreground runs of the crashed one, and spares a pid that is another process now', async () => {
    const first = await startDaemon();
    const client = await first.session('s1');
    const marker = join(first.dir, 'run-pids');
    // A run whose tree is its shell and a child: both outlive a crashed daemon unless ended.
    const running = client
      .run({ sessionId: 's1', command: `sleep 300 & printf '%s\\n' $$ $! > ${marker}; wait` })
      .catch(() => undefined);
    await waitFor(() => existsSync(marker) && pidsIn(readFileSync(marker, 'utf8')).length === 2, 'the run to start');
    const runPids = pidsIn(readFileSync(marker, 'utf8'));
    expect(runPids).toHaveLength(2);
    // The daemon records a run once its spawn has answered, which under load comes after the
    // command's first line: the crash comes once the run is tracked.
    await waitFor(async () => (await client.call(DaemonStatus, {})).processes > 0, 'the run to be tracked');
    await first.crash();
    await running;
    expect(alivePids(runPids)).toEqual(runPids);
    // Records a journal might hold that must not be acted on: pid 1, and a live process whose
    // start time is not the one recorded (its pid was reused).
    const decoy = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
    onTestFinished(() => void decoy.kill('SIGKILL'));
    appendFileSync(
      join(first.stateDir, 'runs.journal'),
      [
        { op: 'start', pgid: 1, sessionId: 's1' },
        { op: 'start', pgid: decoy.pid, sessionId: 's1', procStartTime: 1 },
      ]
        .map((entry) => `${JSON.stringify(entry)}\n`)
        .join(''),
    );
    const startedAt = Date.now();
    const second = await startDaemon({ stateDir: first.stateDir, socketPath: first.socketPath });
    expect(await waitPidsGone(runPids)).toEqual([]);
    console.log(`crashed daemon's run ended ${Date.now() - startedAt} ms after the next daemon was started`);
    expect(second.stderr()).toContain('ending the foreground runs a crashed daemon left');
    expect(alivePids([decoy.pid!])).toEqual([decoy.pid]);
  });
});
