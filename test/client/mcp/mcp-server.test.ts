/**
 * `execd mcp` driven by the MCP SDK's own Client over stdio, against a real daemon: the tools are
 * the library's (names, descriptions, schemas, rendered text), background completions arrive as
 * logging notifications, and the server exits when its stdin closes, leaving no process.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LoggingMessageNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ChildProcess } from 'node:child_process';
import { describe, expect, it, onTestFinished } from 'vitest';
import { yieldedLine } from '../../../client/terminal-render.js';
import { SessionOpen, TerminalList, TerminalRead } from '../../../protocol/methods.js';
import { createShellTools } from '../../../client/tool/index.js';
import { CLI, startDaemon, waitPidsGone, type TestDaemon } from '../../helpers/daemon.js';
import { waitFor } from '../../helpers/wait.js';

async function mcpClient(daemon: TestDaemon, session = 'mcp-test', flags: string[] = []) {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--socket', daemon.socketPath, '--state-dir', daemon.stateDir, '--session', session, ...flags],
    cwd: daemon.dir,
    env,
    stderr: 'pipe',
  });
  const client = new Client({ name: 'execd-test', version: '1.0.0' });
  const logs: string[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
    logs.push(String(notification.params.data));
  });
  await client.connect(transport);
  const pid = transport.pid!;
  onTestFinished(async () => {
    await client.close().catch(() => undefined);
    await waitPidsGone([pid]);
  });
  const call = async (name: string, args: Record<string, unknown>) =>
    (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = (result: CallToolResult) => (result.content[0] as { text: string }).text;
  return { client, transport, pid, logs, call, text };
}

describe('execd mcp', () => {
  it('lists the library tools with the same descriptions and JSON Schemas', async () => {
    const daemon = await startDaemon();
    const { client } = await mcpClient(daemon);
    const listed = await client.listTools();
    const library = await createShellTools({ client: await daemon.connect(), session: { id: 'lib', cwd: daemon.dir } });
    expect(listed.tools.map((tool) => tool.name)).toEqual(library.tools.map((tool) => tool.name));
    for (const tool of library.tools) {
      const served = listed.tools.find((candidate) => candidate.name === tool.name)!;
      expect(served.description).toBe(tool.description);
      expect(served.inputSchema).toEqual(tool.inputSchema);
    }
    expect(client.getInstructions()).toBe(library.systemPrompt.text);
  });

  it('runs commands with the rendered text: success, failure, timeout and bad arguments', async () => {
    const daemon = await startDaemon();
    const { call, text } = await mcpClient(daemon);
    const ok = await call('bash', { command: 'pwd; echo out', description: 'Print the directory' });
    expect(text(ok)).toBe(`${daemon.dir}\nout\n`);
    expect(ok.isError).toBe(false);

    const failed = await call('bash', { command: 'echo oops >&2; exit 3', description: 'Fail on purpose' });
    expect(text(failed)).toBe('[stderr]\noops\n[exit code: 3]');
    expect(failed.isError).toBe(false);

    const slow = await call('bash', { command: 'sleep 30', description: 'Sleep too long', timeoutMs: 300 });
    expect(text(slow)).toBe('(no output)\n[timed out after 300ms]\n[killed by signal: SIGTERM]');

    const bad = await call('bash', { command: 'true', description: 'Bad timeout', timeoutMs: 'soon' });
    expect(bad.isError).toBe(true);
    expect(text(bad)).toBe('invalid timeoutMs: expected a positive number, got "soon"');
  });

  it('starts a background job, reads it to the end, is told of its end, and kills another', async () => {
    const daemon = await startDaemon();
    const { call, text, logs } = await mcpClient(daemon);
    const started = await call('bash', {
      command: 'echo one; sleep 0.3; echo two',
      description: 'A short background job',
      run_in_background: true,
    });
    const jobId = /started background job (bash-\d+)/.exec(text(started))![1]!;
    await waitFor(() => logs.some((line) => line.includes(jobId)), 'the job-exited log notification');
    expect(logs.find((line) => line.includes(jobId))).toMatch(/completed \(exit code: 0\)/);
    const read = await call('job_output', { job_id: jobId });
    expect(text(read)).toContain('one\ntwo\n');

    const long = await call('bash', { command: 'sleep 60', description: 'A long job', run_in_background: true });
    const longId = /started background job (bash-\d+)/.exec(text(long))![1]!;
    const killed = await call('job_kill', { job_id: longId });
    expect(killed.isError).toBe(false);
    expect(text(killed)).toContain(longId);
  });

  it('with --persistent and --terminals: one shell that keeps its state, and the terminal tools', async () => {
    const daemon = await startDaemon();
    const { client, call, text } = await mcpClient(daemon, 'mcp-term', ['--persistent', '--terminals']);
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    expect(names).toEqual([
      'bash',
      'terminal_open',
      'terminal_send',
      'terminal_read',
      'terminal_signal',
      'terminal_close',
      'terminal_list',
    ]);
    expect(client.getInstructions()).toContain('Use a terminal session only when work needs');
    await call('bash', { command: 'cd /tmp && export MCP_K=v', description: 'Change directory and export' });
    const kept = await call('bash', { command: 'echo "$PWD $MCP_K"', description: 'Show the kept state' });
    expect(text(kept)).toBe('/tmp v\n');
    const opened = await call('terminal_open', { name: 'repl' });
    const terminalId = /term-\d+/.exec(text(opened))![0];
    const sent = await call('terminal_send', { terminal_id: terminalId, text: 'read x; echo "got $x"' });
    expect(text(sent)).toContain('[ready: waiting for input]');
    const answered = await call('terminal_send', { terminal_id: terminalId, text: 'hi' });
    expect(text(answered)).toContain('got hi');
    const closed = await call('terminal_close', { terminal_id: terminalId });
    expect(closed.isError).toBe(false);
  });

  it('with --persistent --yield-ms: a command still going answers with its output so far; the next call shows the rest', async () => {
    const daemon = await startDaemon();
    const { call, text } = await mcpClient(daemon, 'mcp-yield', ['--persistent', '--yield-ms', '1500']);
    const count = `python3 -c 'import time; [print(i, flush=True) or time.sleep(1) for i in range(4)]'`;
    const first = await call('bash', { command: count, description: 'Count slowly' });
    expect(first.isError).toBeFalsy();
    expect(text(first)).toMatch(/^0\n(1\n)?\[still running after 1500ms; /);
    expect(text(first).endsWith(yieldedLine(1_500))).toBe(true);
    // Once the count ended, the next call shows what it printed since, then runs at the prompt.
    const watcher = await daemon.connect();
    await watcher.call(SessionOpen, { sessionId: 'mcp-yield' });
    const [terminal] = await watcher.call(TerminalList, { sessionId: 'mcp-yield' });
    await waitFor(
      async () =>
        (await watcher.call(TerminalRead, { sessionId: 'mcp-yield', terminalId: terminal!.id })).exitCode !== undefined,
      'the count to end',
    );
    const next = await call('bash', { command: 'echo after', description: 'Show the rest' });
    expect(text(next)).toMatch(/3\n[^]*after\n/);
  });

  it('refuses a --yield-ms that is not a whole number of milliseconds', async () => {
    const daemon = await startDaemon();
    const result = await failedStart(daemon, ['--persistent', '--yield-ms', '1.5']);
    expect(result.code).toBe(2);
    expect(result.stderr()).toContain(
      '--yield-ms must be a whole number of milliseconds between 1 and 86400000, got "1.5"',
    );
  });

  it('exits when its stdin closes and leaves no process behind', async () => {
    const daemon = await startDaemon();
    const { transport, pid, call } = await mcpClient(daemon);
    await call('bash', { command: 'true', description: 'Touch the daemon' });
    await transport.close();
    expect(await waitPidsGone([pid])).toEqual([]);
  });

  /**
   * Spawns `execd mcp` with `flags` and connects the SDK's Client: resolves with how `initialize`
   * ended, the server's exit code and how long after the spawn it exited.
   */
  async function failedStart(daemon: TestDaemon, flags: string[]) {
    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp', '--socket', daemon.socketPath, '--state-dir', daemon.stateDir, ...flags],
      cwd: daemon.dir,
      env,
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const client = new Client({ name: 'execd-test', version: '1.0.0' });
    const started = Date.now();
    const connected = client.connect(transport).then(
      () => 'connected',
      (error: unknown) => (error instanceof Error ? error.message : String(error)),
    );
    // The transport spawns its child in connect() and keeps it private; its exit code is asserted.
    await new Promise((resolveTick) => setImmediate(resolveTick));
    const child = (transport as unknown as { _process?: ChildProcess })._process!;
    const pid = child.pid!;
    onTestFinished(async () => {
      await client.close().catch(() => undefined);
      await waitPidsGone([pid]);
    });
    const exit = new Promise<number | null>((resolveExit) => {
      if (child.exitCode !== null) resolveExit(child.exitCode);
      else child.once('exit', (code) => resolveExit(code));
    });
    const code = await exit;
    return { initialize: await connected, code, elapsedMs: Date.now() - started, stderr: () => stderr };
  }

  it('answers initialize with the error and exits non-zero when its session cannot be opened', async () => {
    const daemon = await startDaemon();
    // The session exists with another cwd: opening it with the server's cwd is refused.
    await daemon.session('mcp-taken', '/tmp');
    const result = await failedStart(daemon, ['--session', 'mcp-taken']);
    expect(result.initialize).toMatch(/execd mcp: .*mcp-taken/);
    expect(result.code).toBe(125);
    expect(result.elapsedMs).toBeLessThan(5_000);
    expect(result.stderr()).toMatch(/execd mcp: .*mcp-taken/);
  });

  it('fails at start for a workdir that does not exist', async () => {
    const daemon = await startDaemon();
    const result = await failedStart(daemon, ['--workdir', '/nonexistent/dir']);
    expect(result.initialize).toContain('execd mcp: workdir /nonexistent/dir does not exist');
    expect(result.code).toBe(125);
    expect(result.elapsedMs).toBeLessThan(5_000);
  });
});
