/**
 * Issue 13, point 10: `job/kill` reaches every process of the job's group, whether or not the
 * job's shell is still alive. A job whose shell exited while its descendants live on settles with
 * them as leftovers; killing it kills them (`killed: true`). A fork bomb, bounded by a cgroup v1
 * pids controller made for the test, is killed whole.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { describe, expect, it, onTestFinished } from 'vitest';
import { DaemonStatus, JobKill, JobWait, ShellStart } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { alivePids, membersOfGroups, pidsIn } from '../helpers/procs.js';
import { waitFor } from '../helpers/wait.js';

const PIDS_ROOT = '/sys/fs/cgroup/pids';

/** Live (non-zombie) members of a group. */
const liveMembers = (pgid: number) => membersOfGroups([pgid]).filter((stat) => stat.state !== 'Z');

/** Pids in a cgroup (live or zombie). */
function cgroupPids(dir: string): number[] {
  return pidsIn(readFileSync(`${dir}/cgroup.procs`, 'utf8'));
}

describe('job/kill', () => {
  it('kills the rest of a job whose shell already exited', async () => {
    const daemon = await startDaemon({ config: { graceMs: 500 } });
    const client = await daemon.session('s');
    // A bounded tree: 20 descendants in the job's group, the shell exits at once.
    const job = await client.call(ShellStart, {
      sessionId: 's',
      command: 'for i in $(seq 20); do (sleep 600; sleep 600) & done; echo spawned',
    });
    const settled = await client.call(JobWait, { sessionId: 's', jobId: job.jobId, timeoutMs: 15_000 });
    expect(settled.status).toBe('completed');
    const left = liveMembers(job.pid).length;
    expect(left).toBeGreaterThanOrEqual(20);
    expect((await client.call(DaemonStatus, {})).processes).toBe(1);

    const killed = await client.call(JobKill, { sessionId: 's', jobId: job.jobId });
    expect(killed.killed).toBe(true);
    // It answered once the whole group was gone.
    expect(liveMembers(job.pid)).toHaveLength(0);
    expect((await client.call(DaemonStatus, {})).processes).toBe(0);
    // Nothing left: a second kill answers false.
    expect((await client.call(JobKill, { sessionId: 's', jobId: job.jobId })).killed).toBe(false);
    console.log(`job/kill after the shell exited: ${left} processes of the job's group killed, killed: true`);
  });

  it('kills a running job whose tree keeps forking', async () => {
    const daemon = await startDaemon({ config: { graceMs: 300 } });
    const client = await daemon.session('s');
    const job = await client.call(ShellStart, {
      sessionId: 's',
      // Respawns every child that dies, until killed itself.
      command: 'while true; do for i in 1 2 3 4 5; do sleep 600 & done; wait -n; done',
    });
    await waitFor(() => liveMembers(job.pid).length >= 6, 'the tree to grow');
    const killed = await client.call(JobKill, { sessionId: 's', jobId: job.jobId });
    expect(killed.killed).toBe(true);
    expect(liveMembers(job.pid)).toHaveLength(0);
  });

  it('kills a fork bomb started as a job (bounded by a cgroup pids controller)', async () => {
    if (!existsSync(`${PIDS_ROOT}/cgroup.procs`)) throw new Error(`no cgroup v1 pids controller at ${PIDS_ROOT}`);
    const cgroup = `${PIDS_ROOT}/execd-test-bomb-${process.pid}`;
    mkdirSync(cgroup);
    writeFileSync(`${cgroup}/pids.max`, '64');
    onTestFinished(async () => {
      for (let i = 0; i < 50 && cgroupPids(cgroup).length > 0; i++) {
        for (const pid of cgroupPids(cgroup)) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // Gone.
          }
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      rmdirSync(cgroup);
    });
    const daemon = await startDaemon({ config: { graceMs: 500 } });
    const client = await daemon.session('s');
    // The shell moves itself into the cgroup before the bomb: every descendant stays inside it.
    const job = await client.call(ShellStart, {
      sessionId: 's',
      command: `echo $$ > ${cgroup}/cgroup.procs && bomb() { bomb | bomb & }; bomb 2>/dev/null`,
    });
    await waitFor(() => alivePids(cgroupPids(cgroup)).length >= 32, 'the bomb to fill its cgroup');
    const peak = alivePids(cgroupPids(cgroup)).length;
    const killed = await client.call(JobKill, { sessionId: 's', jobId: job.jobId });
    const left = alivePids(cgroupPids(cgroup)).length;
    expect(liveMembers(job.pid)).toHaveLength(0);
    expect(left).toBe(0);
    expect((await client.call(DaemonStatus, {})).processes).toBe(0);
    console.log(
      `fork bomb job (pids.max 64): ${peak} processes at the kill, ${left} left after job/kill (killed: ${killed.killed})`,
    );
  });
});
