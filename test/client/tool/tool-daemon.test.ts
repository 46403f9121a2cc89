/** The model-facing tool end to end through a real daemon (SPEC §3). */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  createShellTools,
  type EscalationRequest,
  type JobNotice,
  type ShellTools,
} from '../../../client/tool/index.js';
import { parseExitStatus } from '../../../shared/render.js';
import { DaemonStatus, JobList } from '../../../protocol/methods.js';
import { startDaemon, waitPidsGone } from '../../helpers/daemon.js';
import { pidsIn } from '../../helpers/procs.js';
import { waitFor } from '../../helpers/wait.js';

describe('the shell tool through a real daemon', () => {
  it('gives two sessions with different cwds each its own working directory', async () => {
    const daemon = await startDaemon();
    const [cwdA, cwdB] = [join(daemon.dir, 'agent-a'), join(daemon.dir, 'agent-b')];
    mkdirSync(join(cwdA, 'src'), { recursive: true });
    mkdirSync(cwdB);
    const a = await createShellTools({ client: await daemon.connect(), session: { id: 'agent-a', cwd: cwdA } });
    const b = await createShellTools({ client: await daemon.connect(), session: { id: 'agent-b', cwd: cwdB } });
    const [ra, rb] = await Promise.all([
      a.shell.execute({ command: 'pwd', description: 'Print the working directory' }),
      b.shell.execute({ command: 'pwd', description: 'Print the working directory' }),
    ]);
    expect(ra).toMatchObject({ text: `${cwdA}\n`, isError: false });
    expect(rb).toMatchObject({ text: `${cwdB}\n`, isError: false });
    const sub = await a.shell.execute({ command: 'pwd', description: 'Print the working directory', workdir: 'src' });
    expect(sub.text).toBe(`${join(cwdA, 'src')}\n`);
  });

  it('renders a non-zero exit as a result, not an error, with the managed variables set', async () => {
    const daemon = await startDaemon();
    const tools = await createShellTools({
      client: await daemon.connect(),
      session: { id: 's1', cwd: daemon.dir, dshEnv: { DSH_HOME: '/home/agent' } },
    });
    const result = await tools.shell.execute({
      command: 'echo "$DSH_SESSION_ID $DSH_HOME"; echo oops >&2; exit 2',
      description: 'Show the session and fail',
    });
    expect(result.text).toBe('s1 /home/agent\n[stderr]\noops\n[exit code: 2]');
    expect(result.isError).toBe(false);
    expect(result.details).toMatchObject({ kind: 'run', result: { exitCode: 2 } });
    expect(parseExitStatus(result.text)).toEqual({ body: 's1 /home/agent\n[stderr]\noops', exitCode: 2 });
  });

  it('renders a timeout with its markers', async () => {
    const daemon = await startDaemon();
    const tools = await createShellTools({ client: await daemon.connect(), session: { id: 's1', cwd: daemon.dir } });
    const result = await tools.shell.execute({
      command: 'echo start; sleep 30',
      description: 'Sleep too long',
      timeoutMs: 300,
    });
    expect(result.text).toBe('start\n[timed out after 300ms]\n[killed by signal: SIGTERM]');
    expect(result.isError).toBe(false);
  });

  it('refuses bad arguments before anything reaches the daemon', async () => {
    const daemon = await startDaemon();
    const tools = await createShellTools({
      client: await daemon.connect(),
      session: { id: 's1', cwd: daemon.dir },
      enableRunInBackground: false,
    });
    const marker = join(daemon.dir, 'ran');
    const cases: Array<[Record<string, unknown>, string]> = [
      [
        { command: `touch ${marker}`, description: '', timeoutMs: 1000 },
        'invalid description: expected a non-empty string',
      ],
      [
        { command: `touch ${marker}`, description: 'Touch a file', timeoutMs: 0 },
        'invalid timeoutMs: expected a positive number, got 0',
      ],
      [
        { command: `touch ${marker}`, description: 'Touch a file', timeoutMs: 'abc' },
        'invalid timeoutMs: expected a positive number, got "abc"',
      ],
      [
        { command: `touch ${marker}`, description: 'Touch a file', run_in_background: true },
        'run_in_background is disabled for this deployment (enableRunInBackground: false)',
      ],
    ];
    for (const [args, message] of cases) {
      expect(await tools.shell.execute(args)).toEqual({
        text: message,
        isError: true,
        details: { kind: 'invalid', message },
      });
    }
    expect(existsSync(marker)).toBe(false);
    expect(tools.shell.inputSchema.properties).not.toHaveProperty('run_in_background');
    expect(tools.jobOutput).toBeUndefined();
  });

  it('reports an infrastructure failure as an error result', async () => {
    const daemon = await startDaemon();
    const tools = await createShellTools({ client: await daemon.connect(), session: { id: 's1', cwd: daemon.dir } });
    const result = await tools.shell.execute({
      command: 'true',
      description: 'Run in a missing directory',
      workdir: 'missing',
    });
    expect(result.isError).toBe(true);
    expect(result.details).toMatchObject({ kind: 'error', errorName: 'SPAWN_FAILED' });
    expect(result.text).toContain(join(daemon.dir, 'missing'));
  });

  it('aborting a call kills the process tree and raises the abort error', async () => {
    const daemon = await startDaemon();
    const tools = await createShellTools({ client: await daemon.connect(), session: { id: 's1', cwd: daemon.dir } });
    const pidFile = join(daemon.dir, 'pids');
    const controller = new AbortController();
    const call = tools.shell.execute(
      { command: `echo $$ > ${pidFile}; sleep 30 & echo $! >> ${pidFile}; wait`, description: 'Sleep until aborted' },
      { signal: controller.signal },
    );
    const pids = await waitFor(() => {
      const found = existsSync(pidFile) ? pidsIn(readFileSync(pidFile, 'utf8')) : [];
      return found.length === 2 ? found : undefined;
    }, 'the pids to be written');
    controller.abort();
    await expect(call).rejects.toMatchObject({ name: 'AbortError' });
    expect(await waitPidsGone(pids)).toEqual([]);
  });

  it('raises the abort error at once for an already aborted call, running nothing', async () => {
    const daemon = await startDaemon();
    const tools = await createShellTools({ client: await daemon.connect(), session: { id: 's1', cwd: daemon.dir } });
    const marker = join(daemon.dir, 'ran');
    await expect(
      tools.shell.execute({ command: `touch ${marker}`, description: 'Touch a file' }, { signal: AbortSignal.abort() }),
    ).rejects.toMatchObject({ name: 'AbortError' });
    expect(existsSync(marker)).toBe(false);
  });

  it('passes trusted inputs the model cannot send', async () => {
    const daemon = await startDaemon();
    const tools = await createShellTools({ client: await daemon.connect(), session: { id: 's1', cwd: daemon.dir } });
    const result = await tools.shell.execute(
      { command: 'cat; echo "$PLUGIN_VAR"', description: 'Echo the hook payload' },
      { trusted: { stdin: '{"hook":1}\n', env: { PLUGIN_VAR: 'v' } } },
    );
    expect(result.text).toBe('{"hook":1}\nv\n');
  });
});

/** Reads a job through `job_output` until it settled; returns every rendered read. */
async function readUntilSettled(tools: ShellTools, jobId: string): Promise<string[]> {
  const reads: string[] = [];
  await waitFor(async () => {
    const read = await tools.jobOutput!.execute({ job_id: jobId });
    expect(read.isError).toBe(false);
    reads.push(read.text);
    return !read.text.includes(`[job ${jobId}: running]`) && !read.text.includes(`[job ${jobId}: stopping]`);
  }, `job ${jobId} to settle`);
  return reads;
}

/** The output part of a rendered read: everything before its state line. */
function outputOf(read: string, jobId: string): string {
  const body = read.slice(0, read.indexOf(`[job ${jobId}: `));
  return body === '(no new output)\n' ? '' : body;
}

describe('background jobs through the tool', () => {
  it('starts a job, reads it with job_output until done, and hands the completion to the harness', async () => {
    const daemon = await startDaemon();
    const notices: JobNotice[] = [];
    const tools = await createShellTools({
      client: await daemon.connect(),
      session: { id: 's1', cwd: daemon.dir },
      onJobExited: (notice) => notices.push(notice),
    });
    expect(tools.tools.map((tool) => tool.name)).toEqual(['bash', 'job_output', 'job_kill', 'job_list']);
    const command = 'for i in 1 2 3; do echo tick $i; sleep 0.1; done; echo warn >&2; exit 3';
    const started = await tools.shell.execute({ command, description: 'Tick three times', run_in_background: true });
    expect(started.text).toMatch(/^started background job bash-\d+$/);
    expect(started.isError).toBe(false);
    const jobId = started.text.slice('started background job '.length);
    expect(started.details).toMatchObject({ kind: 'background', jobId });

    const reads = await readUntilSettled(tools, jobId);
    const last = reads.at(-1)!;
    expect(last.endsWith(`[job ${jobId}: completed]\n[exit code: 3]`)).toBe(true);
    // Consuming reads: together they deliver every byte once.
    const stdout = reads.map((read) => outputOf(read, jobId)).join('');
    expect(stdout.replace('[stderr]\nwarn\n', '')).toBe('tick 1\ntick 2\ntick 3\n');
    expect(stdout).toContain('[stderr]\nwarn\n');
    expect(await tools.jobOutput!.execute({ job_id: jobId })).toMatchObject({
      text: `(no new output)\n[job ${jobId}: completed]\n[exit code: 3]`,
      isError: false,
    });

    await waitFor(() => notices.length === 1, 'the completion notice');
    expect(notices[0]).toMatchObject({ sessionId: 's1', job: { id: jobId, status: 'completed', exitCode: 3 } });
    expect(notices[0]!.text).toBe(`background job ${jobId} completed (exit code: 3): ${command}`);
  });

  it('kills a job with job_kill, and says so when it had already finished', async () => {
    const daemon = await startDaemon();
    const tools = await createShellTools({ client: await daemon.connect(), session: { id: 's1', cwd: daemon.dir } });
    const pidFile = join(daemon.dir, 'pids');
    const started = await tools.shell.execute({
      command: `echo $$ > ${pidFile}; sleep 30 & echo $! >> ${pidFile}; wait`,
      description: 'Sleep in the background',
      run_in_background: true,
    });
    const jobId = started.text.slice('started background job '.length);
    const pids = await waitFor(() => {
      const found = existsSync(pidFile) ? pidsIn(readFileSync(pidFile, 'utf8')) : [];
      return found.length === 2 ? found : undefined;
    }, 'the pids to be written');
    expect(await tools.jobKill!.execute({ job_id: jobId })).toEqual({
      text: `killed background job ${jobId}`,
      isError: false,
      details: { kind: 'kill', jobId, killed: true },
    });
    expect(await waitPidsGone(pids)).toEqual([]);
    expect((await tools.jobOutput!.execute({ job_id: jobId })).text).toBe(
      `(no new output)\n[job ${jobId}: killed]\n[killed by signal: SIGTERM]`,
    );
    expect((await tools.jobKill!.execute({ job_id: jobId })).text).toBe(`background job ${jobId} had already finished`);
  });

  it('renders a read that fell behind with the lossy notice naming the log file', async () => {
    const daemon = await startDaemon({ config: { maxOutputBytes: 1000 } });
    const tools = await createShellTools({ client: await daemon.connect(), session: { id: 's1', cwd: daemon.dir } });
    const started = await tools.shell.execute({
      command: "head -c 5000 /dev/zero | tr '\\0' a",
      description: 'Print more than the window',
      run_in_background: true,
    });
    const jobId = started.text.slice('started background job '.length);
    const watcher = await daemon.connect();
    await waitFor(
      async () => (await watcher.call(JobList, { all: true }))[0]?.status === 'completed',
      'the job to complete',
    );
    const read = await tools.jobOutput!.execute({ job_id: jobId });
    expect(read.details).toMatchObject({ kind: 'read', read: { lossy: true } });
    const details = read.details as { read: { stdoutSpillPath?: string; stderrSpillPath?: string; delta: string } };
    const { stdoutSpillPath, stderrSpillPath, delta } = details.read;
    expect(stdoutSpillPath).toBe(join(daemon.stateDir, 'spill', 's1', `${jobId}.stdout`));
    const paths = [stdoutSpillPath, stderrSpillPath].filter(Boolean).join(', ');
    expect(read.text).toBe(
      `${delta}\n[some output was dropped from memory; full output: ${paths}]\n[job ${jobId}: completed]`,
    );
    expect(delta).toBe('a'.repeat(1000));
    expect(readFileSync(details.read.stdoutSpillPath!, 'utf8')).toBe('a'.repeat(5000));
  });

  it("answers unknown jobs and other sessions' jobs with error results", async () => {
    const daemon = await startDaemon();
    const mine = await createShellTools({ client: await daemon.connect(), session: { id: 'mine', cwd: daemon.dir } });
    const other = await createShellTools({ client: await daemon.connect(), session: { id: 'other', cwd: daemon.dir } });
    const started = await other.shell.execute({
      command: 'sleep 30',
      description: 'Sleep in the background',
      run_in_background: true,
    });
    const jobId = started.text.slice('started background job '.length);
    expect((await mine.jobOutput!.execute({ job_id: jobId })).details).toMatchObject({
      kind: 'error',
      errorName: 'FORBIDDEN',
    });
    expect((await mine.jobKill!.execute({ job_id: jobId })).isError).toBe(true);
    expect((await mine.jobOutput!.execute({ job_id: 'bash-9999' })).details).toMatchObject({
      kind: 'error',
      errorName: 'JOB_NOT_FOUND',
    });
    expect(await mine.jobOutput!.execute({ job_id: '' })).toMatchObject({
      isError: true,
      text: 'invalid job_id: expected a non-empty string',
    });
    await other.jobKill!.execute({ job_id: jobId });
  });

  it('hands over a completion that happened while the harness was away when it reattaches', async () => {
    const daemon = await startDaemon();
    const first = await daemon.connect();
    const before = await createShellTools({ client: first, session: { id: 's1', cwd: daemon.dir } });
    const marker = join(daemon.dir, 'go');
    const command = `while [ ! -e ${marker} ]; do sleep 0.05; done; echo finished`;
    const started = await before.shell.execute({
      command,
      description: 'Wait for the go file',
      run_in_background: true,
    });
    const jobId = started.text.slice('started background job '.length);
    first.close();
    const watcher = await daemon.connect();
    // The job must settle only once the daemon has seen the harness go, or the notice goes to it.
    await waitFor(
      async () =>
        (await watcher.call(DaemonStatus, {})).sessions.find((session) => session.sessionId === 's1')?.connections ===
        0,
      'the daemon to see the harness disconnect',
    );
    writeFileSync(marker, '');
    await waitFor(async () => {
      const [job] = await watcher.call(JobList, { all: true });
      return job?.status === 'completed';
    }, 'the job to complete');
    const notices: JobNotice[] = [];
    const after = await createShellTools({
      client: await daemon.connect(),
      session: { id: 's1', cwd: daemon.dir },
      onJobExited: (notice) => notices.push(notice),
    });
    expect(notices.map((notice) => notice.text)).toEqual([
      `background job ${jobId} completed (exit code: 0): ${command}`,
    ]);
    expect((await after.jobOutput!.execute({ job_id: jobId })).text).toBe(`finished\n[job ${jobId}: completed]`);
  });
});

describe('escalation through the tool', () => {
  async function confinedTools(approve: (request: EscalationRequest) => boolean) {
    const daemon = await startDaemon();
    const workspace = join(daemon.dir, 'ws');
    const outside = join(daemon.dir, 'outside');
    mkdirSync(workspace);
    mkdirSync(outside);
    const requests: EscalationRequest[] = [];
    const tools = await createShellTools({
      client: await daemon.connect(),
      session: { id: 's1', cwd: workspace, sandbox: { mode: 'workspace-write', workspaceRoot: workspace } },
      approveEscalation: (request) => {
        requests.push(request);
        return approve(request);
      },
    });
    return { tools, requests, workspace, outside };
  }

  it('offers sandbox_permissions only for a confined session with an approver', async () => {
    const { tools } = await confinedTools(() => true);
    expect(Object.keys(tools.shell.inputSchema.properties as object)).toContain('sandbox_permissions');
    expect(tools.shell.description).toContain('sandbox_permissions');
    expect(tools.shell.description).toContain('[sandbox: file access denied under workspace-write mode]');
  });

  it('refuses sandbox_permissions without a justification, asking nobody and running nothing', async () => {
    const { tools, requests, outside } = await confinedTools(() => true);
    const marker = join(outside, 'escaped');
    const result = await tools.shell.execute({
      command: `touch ${marker}`,
      description: 'Write outside the workspace',
      sandbox_permissions: 'danger-full-access',
    });
    expect(result).toMatchObject({
      isError: true,
      text: 'invalid sandbox_permissions: a non-empty justification is required with it',
    });
    expect(requests).toEqual([]);
    expect(existsSync(marker)).toBe(false);
  });

  it('runs nothing when the approval is refused', async () => {
    const { tools, requests, outside, workspace } = await confinedTools(() => false);
    const marker = join(outside, 'escaped');
    const result = await tools.shell.execute({
      command: `touch ${marker}`,
      description: 'Write outside the workspace',
      sandbox_permissions: 'danger-full-access',
      justification: 'The build writes its cache there',
    });
    expect(result).toEqual({
      text: '[sandbox: escalation to danger-full-access was not approved; the command did not run]',
      isError: true,
      details: { kind: 'rejected', requestedMode: 'danger-full-access', outcome: 'rejected' },
    });
    expect(requests).toEqual([
      {
        sessionId: 's1',
        command: `touch ${marker}`,
        workdir: workspace,
        currentMode: 'workspace-write',
        requestedMode: 'danger-full-access',
        justification: 'The build writes its cache there',
        background: false,
      },
    ]);
    expect(existsSync(marker)).toBe(false);
  });

  it('runs under the wider mode when approved', async () => {
    const { tools, requests, outside } = await confinedTools(() => true);
    const marker = join(outside, 'escaped');
    const result = await tools.shell.execute({
      command: `touch ${marker} && echo written`,
      description: 'Write outside the workspace',
      sandbox_permissions: 'danger-full-access',
      justification: 'The build writes its cache there',
    });
    expect(requests).toHaveLength(1);
    expect(result).toMatchObject({ text: 'written\n', isError: false });
    expect(result.details).toMatchObject({
      kind: 'run',
      result: { sandbox: { mode: 'danger-full-access', denied: false } },
    });
    expect(existsSync(marker)).toBe(true);
  });

  it('renders a real denial with the marker and the hint, and the approved retry writes under the wider mode', async () => {
    const { tools, requests, workspace } = await confinedTools(() => true);
    // Outside the workspace and outside the sandbox's private /tmp: a real denied write.
    const marker = `/var/tmp/execd-escalation-test-${process.pid}-${Date.now()}`;
    onTestFinished(() => rmSync(marker, { force: true }));
    const args = { command: `touch ${marker}`, description: 'Write outside the workspace' };
    const denied = await tools.shell.execute(args);
    expect(denied.isError).toBe(false);
    expect(denied.details).toMatchObject({
      kind: 'run',
      result: { sandbox: { mode: 'workspace-write', denied: true } },
    });
    expect(
      denied.text.endsWith(
        '\n[sandbox: file access denied under workspace-write mode]\n' +
          '[sandbox: to retry with wider file access, call again with sandbox_permissions (danger-full-access) and a justification]\n' +
          '[exit code: 1]',
      ),
    ).toBe(true);
    expect(existsSync(marker)).toBe(false);
    // Inside the workspace the confined run writes.
    expect(
      (await tools.shell.execute({ command: 'touch inside && echo ok', description: 'Write inside the workspace' }))
        .text,
    ).toBe('ok\n');
    expect(existsSync(join(workspace, 'inside'))).toBe(true);

    const retried = await tools.shell.execute({
      ...args,
      sandbox_permissions: 'danger-full-access',
      justification: 'The cache lives there',
    });
    expect(requests).toHaveLength(1);
    expect(retried).toMatchObject({ text: '(no output)', isError: false });
    expect(retried.details).toMatchObject({
      kind: 'run',
      result: { sandbox: { mode: 'danger-full-access', denied: false } },
    });
    expect(existsSync(marker)).toBe(true);
  });

  it('renders the denial of a confined background job with the hint in job_output', async () => {
    const { tools } = await confinedTools(() => true);
    const started = await tools.shell.execute({
      command: `echo start; touch /etc/execd-tool-job-test-${process.pid}`,
      description: 'Write to etc in the background',
      run_in_background: true,
    });
    const jobId = started.text.slice('started background job '.length);
    const reads = await readUntilSettled(tools, jobId);
    expect(reads.join('\n')).toContain('start\n');
    expect(
      reads
        .at(-1)!
        .endsWith(
          '[sandbox: file access denied under workspace-write mode]\n' +
            '[sandbox: to retry with wider file access, call again with sandbox_permissions (danger-full-access) and a justification]\n' +
            `[job ${jobId}: completed]\n[exit code: 1]`,
        ),
    ).toBe(true);
  });

  it('refuses a target that is not wider than the session mode', async () => {
    const { tools, requests } = await confinedTools(() => true);
    const result = await tools.shell.execute({
      command: 'true',
      description: 'Ask for the same mode',
      sandbox_permissions: 'workspace-write',
      justification: 'no reason',
    });
    expect(result).toMatchObject({
      isError: true,
      text: `invalid sandbox_permissions: "workspace-write" is not wider than the session's sandbox mode (workspace-write)`,
    });
    expect(requests).toEqual([]);
  });
});
