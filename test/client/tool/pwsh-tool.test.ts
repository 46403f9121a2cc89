/**
 * The `pwsh` tool (SPEC §7): its own description, the same validation messages and markers as
 * `bash`. No PowerShell runs on the Linux test machines, so the daemon's answers are canned here:
 * these tests cover the tool layer only (see README, Windows).
 */
import { describe, expect, it } from 'vitest';
import type { ExecdClient } from '../../../client/connection.js';
import { BASH_FLAVOR, createShellTools, PWSH_FLAVOR } from '../../../client/tool/index.js';
import type { ParamsOf, ShellRun } from '../../../protocol/methods.js';
import type { ShellRunResult } from '../../../protocol/types.js';
import { runResult } from '../../helpers/results.js';

/** A client whose daemon answers every run with `answer`, recording the requests. */
function cannedClient(answer: Partial<ShellRunResult>) {
  const requests: Array<ParamsOf<typeof ShellRun>> = [];
  const client = {
    info: { capabilities: { shell: 'pwsh', background: true, sandboxModes: ['danger-full-access'], streaming: true } },
    onJobExited: () => ({ dispose() {} }),
    call: () => Promise.resolve({ sessionId: 's1', reattached: false, jobs: [] }),
    run: (request: ParamsOf<typeof ShellRun>): Promise<ShellRunResult> => {
      requests.push(request);
      return Promise.resolve(runResult(answer));
    },
  };
  return { client: client as unknown as ExecdClient, requests };
}

async function pwshTools(answer: Partial<ShellRunResult> = {}, enableRunInBackground = true) {
  const { client, requests } = cannedClient(answer);
  const tools = await createShellTools({
    client,
    session: { id: 's1', cwd: 'C:\\work\\repo' },
    flavor: PWSH_FLAVOR,
    enableRunInBackground,
  });
  return { tools, requests };
}

describe('the pwsh tool', () => {
  it('is named pwsh, describes PowerShell syntax, and has its own system-prompt section', async () => {
    const { tools } = await pwshTools();
    expect(tools.shell.name).toBe('pwsh');
    expect(tools.tools.map((tool) => tool.name)).toEqual(['pwsh', 'job_output', 'job_kill', 'job_list']);
    expect(tools.shell.description).toContain('pwsh -NoProfile -NonInteractive -Command');
    expect(tools.shell.description).toContain('$env:DSH_SESSION_ID');
    expect(tools.shell.description).toContain('Get-Content');
    expect(tools.shell.description).not.toContain('bash -c');
    expect(tools.systemPrompt).toEqual({
      name: 'tool:pwsh',
      order: 105,
      text:
        'Check the [exit code: N] marker on every pwsh result; investigate failures before moving on. ' +
        'To wait for a background job, call job_output with wait_ms (up to 30000) rather than polling it or running sleep.',
    });
  });

  it('has the same parameters as bash', async () => {
    const { tools } = await pwshTools();
    expect(Object.keys(tools.shell.inputSchema.properties as object)).toEqual([
      'command',
      'description',
      'timeoutMs',
      'workdir',
      'run_in_background',
    ]);
  });

  it.each([
    [{ command: '', description: 'List the files' }, 'invalid command: expected a non-empty string'],
    [{ command: '   ', description: 'List the files' }, 'invalid command: expected a non-empty string'],
    [{ command: 'Get-ChildItem', description: '' }, 'invalid description: expected a non-empty string'],
    [
      { command: 'Get-ChildItem', description: 'List the files', timeoutMs: 0 },
      'invalid timeoutMs: expected a positive number, got 0',
    ],
    [
      { command: 'Get-ChildItem', description: 'List the files', timeoutMs: -5 },
      'invalid timeoutMs: expected a positive number, got -5',
    ],
    [
      { command: 'Get-ChildItem', description: 'List the files', timeoutMs: 'abc' },
      'invalid timeoutMs: expected a positive number, got "abc"',
    ],
  ])('refuses %j with the bash message', async (args, message) => {
    const { tools, requests } = await pwshTools();
    expect(await tools.shell.execute(args)).toEqual({
      text: message,
      isError: true,
      details: { kind: 'invalid', message },
    });
    expect(requests).toEqual([]);
  });

  it('refuses run_in_background while disabled with the deployment message', async () => {
    const { tools, requests } = await pwshTools({}, false);
    const result = await tools.shell.execute({
      command: 'Start-Sleep 9',
      description: 'Sleep a while',
      run_in_background: true,
    });
    expect(result.text).toBe('run_in_background is disabled for this deployment (enableRunInBackground: false)');
    expect(requests).toEqual([]);
  });

  it('resolves a relative workdir against the Windows session cwd', async () => {
    const { tools, requests } = await pwshTools();
    await tools.shell.execute({ command: 'Get-Location', description: 'Show the location', workdir: 'src' });
    // The harness resolves with its own platform's path rules; on Windows this is C:\work\repo\src.
    expect(requests[0]!.workdir).toMatch(/src$/);
    expect(requests[0]!.command).toBe('Get-Location');
  });

  it.each<[string, Partial<ShellRunResult>, string]>([
    ['plain output', { stdout: { text: 'a.txt\r\n', truncated: false } }, 'a.txt\r\n'],
    ['empty output', {}, '(no output)'],
    [
      'stdout without a trailing newline plus stderr',
      { stdout: { text: 'x', truncated: false }, stderr: { text: 'Write-Error: boom\n', truncated: false } },
      'x\n[stderr]\nWrite-Error: boom\n',
    ],
    [
      'truncated stdout',
      { stdout: { text: 'tail', truncated: true, spillPath: 'C:\\state\\spill\\s1\\run-1.stdout' } },
      'tail\n[output truncated; full output: C:\\state\\spill\\s1\\run-1.stdout]',
    ],
    [
      'a timeout and a kill',
      {
        exitCode: null,
        signal: 'SIGTERM',
        timedOut: true,
        timeoutMs: 500,
        stdout: { text: 'start\n', truncated: false },
      },
      'start\n[timed out after 500ms]\n[killed by signal: SIGTERM]',
    ],
    ['exit 1', { exitCode: 1, stdout: { text: 'False\n', truncated: false } }, 'False\n[exit code: 1]'],
    [
      'a marker lookalike with exit 0',
      { stdout: { text: 'ok\n[exit code: 1]', truncated: false } },
      'ok\n[exit code: 1]\n[exit code: 0]',
    ],
  ])('renders %s byte for byte as bash does', async (_name, answer, text) => {
    const { tools } = await pwshTools(answer);
    const result = await tools.shell.execute({ command: 'Write-Output x', description: 'Write some output' });
    expect(result).toMatchObject({ text, isError: false });
    const bash = await createShellTools({
      client: cannedClient(answer).client,
      session: { id: 's1' },
      flavor: BASH_FLAVOR,
    });
    expect((await bash.shell.execute({ command: 'echo x', description: 'Write some output' })).text).toBe(text);
  });
});
