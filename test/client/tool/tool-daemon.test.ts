/** The model-facing tool end to end through a real daemon (SPEC §3). */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createShellTools, type EscalationRequest } from '../../../client/tool/index.js';
import { parseExitStatus } from '../../../client/render.js';
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
    const result = await tools.shell.execute({ command: 'echo start; sleep 30', description: 'Sleep too long', timeoutMs: 300 });
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
      [{ command: `touch ${marker}`, description: '', timeoutMs: 1000 }, 'invalid description: expected a non-empty string'],
      [{ command: `touch ${marker}`, description: 'Touch a file', timeoutMs: 0 }, 'invalid timeoutMs: expected a positive number, got 0'],
      [{ command: `touch ${marker}`, description: 'Touch a file', timeoutMs: 'abc' }, 'invalid timeoutMs: expected a positive number, got "abc"'],
      [
        { command: `touch ${marker}`, description: 'Touch a file', run_in_background: true },
        'run_in_background is disabled for this deployment (enableRunInBackground: false)',
      ],
    ];
    for (const [args, message] of cases) {
      expect(await tools.shell.execute(args)).toEqual({ text: message, isError: true, details: { kind: 'invalid', message } });
    }
    expect(existsSync(marker)).toBe(false);
    expect(tools.shell.inputSchema.properties).not.toHaveProperty('run_in_background');
    expect(tools.jobOutput).toBeUndefined();
  });

  it('reports an infrastructure failure as an error result', async () => {
    const daemon = await startDaemon();
    const tools = await createShellTools({ client: await daemon.connect(), session: { id: 's1', cwd: daemon.dir } });
    const result = await tools.shell.execute({ command: 'true', description: 'Run in a missing directory', workdir: 'missing' });
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
    expect(result).toMatchObject({ isError: true, text: 'invalid sandbox_permissions: a non-empty justification is required with it' });
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
      details: { kind: 'rejected', requestedMode: 'danger-full-access' },
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
    expect(result.details).toMatchObject({ kind: 'run', result: { sandbox: { mode: 'danger-full-access', denied: false } } });
    expect(existsSync(marker)).toBe(true);
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

