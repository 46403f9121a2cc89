/**
 * Background jobs and sessions against a real daemon (SPEC §1.6, §1.7): jobs outlive their
 * client, reattach, `job/exited` to every holder, unreported settlements, session close.
 */
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ExecdClient } from '../../client/connection.js';
import { JobList, JobPeek, JobRead, SessionClose, SessionOpen, ShellStart } from '../../protocol/methods.js';
import type { JobExitedParams, JobSnapshot } from '../../protocol/types.js';
import { startDaemon, waitPidsGone } from '../helpers/daemon.js';
import { alivePids, pidsIn } from '../helpers/procs.js';
import { waitFor } from '../helpers/wait.js';
import { waitJob, waitSessionUnheld } from '../helpers/jobs.js';

/** A command that prints `first`, then each later line once its flag file appears. */
function gated(dir: string, ...flags: string[]): string {
  const wait = (flag: string) => `while [ ! -e ${join(dir, flag)} ]; do sleep 0.02; done`;
  return ['echo first', ...flags.map((flag) => `${wait(flag)}; echo after-${flag}`)].join('; ');
}

/** Collects the `job/exited` notifications a client receives. */
function exitedLog(client: ExecdClient): JobExitedParams[] {
  const seen: JobExitedParams[] = [];
  client.onJobExited((params) => seen.push(params));
  return seen;
}

describe('background jobs and sessions', () => {
  it('keeps a job running when its client drops; a new connection reattaches, reads what came in between, and gets job/exited', async () => {
    const daemon = await startDaemon();
    const first = await daemon.session('s1');
    const { jobId } = await first.call(ShellStart, { sessionId: 's1', command: gated(daemon.dir, 'go', 'end') });
    await waitFor(
      async () => (await first.call(JobRead, { sessionId: 's1', jobId })).delta === 'first\n',
      'the first line',
    );
    first.close();
    const second = await daemon.connect();
    await waitSessionUnheld(second, 's1');
    writeFileSync(join(daemon.dir, 'go'), '');
    await waitFor(
      async () => (await second.call(JobList, { all: true }))[0]!.stdoutBytes === 'first\nafter-go\n'.length,
      'the job to write while no connection has its session open',
    );

    const exited = exitedLog(second);
    const opened = await second.call(SessionOpen, { sessionId: 's1', cwd: daemon.dir });
    expect(opened.reattached).toBe(true);
    expect(opened.jobs.map((job) => [job.id, job.status])).toEqual([[jobId, 'running']]);
    let between = '';
    await waitFor(
      async () => (between += (await second.call(JobRead, { sessionId: 's1', jobId })).delta) === 'after-go\n',
      'the line written while nobody was connected',
    );

    writeFileSync(join(daemon.dir, 'end'), '');
    const notice = await waitFor(() => exited[0], 'job/exited');
    expect(notice.sessionId).toBe('s1');
    expect(notice.job).toMatchObject({ id: jobId, status: 'completed', detail: 'exit code: 0', reported: true });
    expect((await second.call(JobRead, { sessionId: 's1', jobId })).delta).toBe('after-end\n');
  });

  it('sends job/exited to every connection that has the session open, and to no other', async () => {
    const daemon = await startDaemon();
    const a = await daemon.session('s1');
    const b = await daemon.session('s1');
    const stranger = await daemon.session('s2');
    const [seenA, seenB, seenStranger] = [exitedLog(a), exitedLog(b), exitedLog(stranger)];
    const { jobId } = await a.call(ShellStart, { sessionId: 's1', command: 'exit 3' });
    await waitFor(() => seenA.length === 1 && seenB.length === 1, 'both holders to be told');
    expect(seenA[0]!.job).toMatchObject({ id: jobId, status: 'completed', exitCode: 3 });
    expect(seenB[0]).toEqual(seenA[0]);
    // The stranger's own job settles after; by then s1's notice would have arrived too.
    const { jobId: ownId } = await stranger.call(ShellStart, { sessionId: 's2', command: 'true' });
    await waitFor(() => seenStranger.length === 1, "the stranger's own notice");
    expect(seenStranger.map((notice) => notice.job.id)).toEqual([ownId]);
  });

  it('lists a job that settled while nobody had its session open as reported: false, once', async () => {
    const daemon = await startDaemon();
    const starter = await daemon.session('s1');
    const { jobId } = await starter.call(ShellStart, { sessionId: 's1', command: gated(daemon.dir, 'go') });
    starter.close();
    const debug = await daemon.connect();
    // Only once the daemon saw the drop is nobody there to be told.
    await waitSessionUnheld(debug, 's1');
    writeFileSync(join(daemon.dir, 'go'), '');
    const settled = await waitFor(async () => {
      const job = (await debug.call(JobList, { all: true })).find((each) => each.id === jobId);
      return job?.status === 'completed' ? job : undefined;
    }, 'the job to settle with nobody connected');
    expect(settled.reported).toBe(false);

    const back = await daemon.connect();
    const opened = await back.call(SessionOpen, { sessionId: 's1', cwd: daemon.dir });
    expect(opened.jobs.map((job: JobSnapshot) => [job.id, job.status, job.reported])).toEqual([
      [jobId, 'completed', false],
    ]);
    expect((await back.call(JobRead, { sessionId: 's1', jobId })).delta).toBe('first\nafter-go\n');
    const again = await back.call(SessionOpen, { sessionId: 's1', cwd: daemon.dir });
    expect(again.jobs).toEqual([]);
    expect((await back.call(JobList, { sessionId: 's1' }))[0]!.reported).toBe(true);
  });

  it('session/close kills the running jobs and removes their files', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const command = 'echo $$; sleep 300 & echo $!; wait';
    const ids = await Promise.all(
      [1, 2, 3].map(async () => (await client.call(ShellStart, { sessionId: 's1', command })).jobId),
    );
    const { jobId: done } = await client.call(ShellStart, { sessionId: 's1', command: 'echo settled' });
    await waitJob(client, 's1', done);
    const pids = (
      await Promise.all(
        ids.map((jobId) =>
          waitFor(async () => {
            const text = (await client.call(JobPeek, { sessionId: 's1', jobId })).stdout.text;
            return pidsIn(text).length === 2 ? pidsIn(text) : undefined;
          }, `${jobId} to print its pids`),
        ),
      )
    ).flat();
    const logDir = join(daemon.stateDir, 'spill', 's1');
    expect(readdirSync(logDir).sort()).toEqual([...ids, done].flatMap((id) => [`${id}.stderr`, `${id}.stdout`]).sort());

    const closed = await client.call(SessionClose, { sessionId: 's1' });
    expect(closed).toEqual({ killedJobs: 3, closedTerminals: 0, removedFiles: 8 });
    expect(alivePids(pids)).toEqual([]);
    expect(existsSync(logDir)).toBe(false);
    const debug = await daemon.connect();
    expect(await debug.call(JobList, { all: true })).toEqual([]);
  });

  it('keeps a background job alive when its connection drops', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'echo $$; sleep 300 & echo $!; wait' });
    const pids = await waitFor(async () => {
      const text = (await client.call(JobPeek, { sessionId: 's1', jobId })).stdout.text;
      return pidsIn(text).length === 2 ? pidsIn(text) : undefined;
    }, 'the pids');
    client.close();
    const debug = await daemon.connect();
    await waitSessionUnheld(debug, 's1');
    expect(alivePids(pids)).toEqual(pids);
    const back = await daemon.session('s1');
    await back.call(SessionClose, { sessionId: 's1' });
    expect(await waitPidsGone(pids, 100)).toEqual([]);
  });
});
