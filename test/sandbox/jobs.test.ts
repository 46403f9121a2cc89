/** Confined background jobs with a real daemon, once per runner: bubblewrap and Landlock (SPEC §1.6, §6, §15). */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { JobKill, JobWait, ShellStart } from '../../protocol/methods.js';
import { waitPidsGone } from '../helpers/daemon.js';
import { pidsWithArgument } from '../helpers/procs.js';
import type { SandboxPolicy } from '../../protocol/sandbox.js';
import type { TestDaemonOptions } from '../helpers/daemon.js';
import { BACKENDS, confinedPids, sandboxedSession, uniqueSleep } from '../helpers/sandbox.js';

describe.each(BACKENDS)('sandbox under $name', (backend) => {
  const session = (sandbox?: SandboxPolicy, options: TestDaemonOptions = {}) =>
    sandboxedSession(sandbox, { ...options, config: { ...backend.config, ...options.config } });

  describe('sandbox: background jobs', () => {
    it('runs a confined job through the runner: workspace writes land, a denied write shows in the snapshot', async () => {
      const { client, workspace } = await session({ mode: 'workspace-write' });
      const { jobId } = await client.call(ShellStart, {
        sessionId: 's1',
        command: 'echo ok > in.txt; touch /etc/execd-job-test',
      });
      const job = await client.call(JobWait, { sessionId: 's1', jobId, timeoutMs: 30_000 });
      expect(job).toMatchObject({ status: 'completed', detail: 'exit code: 1' });
      expect(job.sandbox).toEqual({ mode: 'workspace-write', denied: true, enforcement: backend.name });
      expect(readFileSync(join(workspace, 'in.txt'), 'utf8')).toBe('ok\n');
      expect(existsSync('/etc/execd-job-test')).toBe(false);
    });

    it('job kill leaves no process alive inside or outside the sandbox', async () => {
      const { client } = await session({ mode: 'read-only' }, { config: { graceMs: 300 } });
      const token = uniqueSleep();
      const { jobId } = await client.call(ShellStart, {
        sessionId: 's1',
        command: `trap '' TERM; sleep ${token} & sleep ${token}`,
      });
      const pids = await confinedPids(token, backend.pidsOfTwoSleeps);
      expect(await client.call(JobKill, { sessionId: 's1', jobId })).toEqual({ killed: true });
      expect(await waitPidsGone(pids, 1000)).toEqual([]);
      expect(pidsWithArgument(token)).toEqual([]);
      const job = await client.call(JobWait, { sessionId: 's1', jobId });
      expect(job).toMatchObject({ status: 'killed', sandbox: { mode: 'read-only', enforcement: backend.name } });
    });

    it('without a working bwrap a confined job is failed with runnerFailed, and never runs', async () => {
      const { client, workspace } = await session(
        { mode: 'workspace-write' },
        { env: { EXECD_BWRAP: '/nonexistent/bwrap' }, config: { sandboxBackend: 'bwrap' } },
      );
      const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'touch ran.txt' });
      const job = await client.call(JobWait, { sessionId: 's1', jobId, timeoutMs: 30_000 });
      expect(job.status).toBe('failed');
      expect(job.detail).toMatch(/^sandbox runner failed: /);
      expect(job.sandbox).toMatchObject({ mode: 'workspace-write', denied: false, runnerFailed: true });
      expect(existsSync(join(workspace, 'ran.txt'))).toBe(false);
    });

    it('a runner that fails before the command ran settles the job failed with runnerFailed', async () => {
      const { client, workspace } = await session({
        mode: 'workspace-write',
        workspaceRoot: '/nonexistent/root',
      });
      const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'touch ran.txt' });
      const job = await client.call(JobWait, { sessionId: 's1', jobId, timeoutMs: 30_000 });
      expect(job).toMatchObject({
        status: 'failed',
        sandbox: { mode: 'workspace-write', runnerFailed: true, enforcement: backend.name },
      });
      expect(job.detail).toContain(`${backend.name}: `);
      expect(existsSync(join(workspace, 'ran.txt'))).toBe(false);
    });

    it('a killed confined job reports the SIGTERM it died of', async () => {
      const { client } = await session({ mode: 'read-only' });
      const token = uniqueSleep();
      const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: `sleep ${token} & sleep ${token}` });
      await confinedPids(token, backend.pidsOfTwoSleeps);
      await client.call(JobKill, { sessionId: 's1', jobId });
      const job = await client.call(JobWait, { sessionId: 's1', jobId });
      expect(job).toMatchObject({ status: 'killed', detail: 'signal: SIGTERM', signal: 'SIGTERM', exitCode: null });
      expect(pidsWithArgument(token)).toEqual([]);
    });

    it('an unconfined job reports danger-full-access, not denied', async () => {
      const { client } = await session({ mode: 'danger-full-access' });
      const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'true' });
      const job = await client.call(JobWait, { sessionId: 's1', jobId, timeoutMs: 30_000 });
      expect(job).toMatchObject({ status: 'completed', sandbox: { mode: 'danger-full-access', denied: false } });
      expect(job.sandbox).not.toHaveProperty('enforcement');
    });
  });
});
