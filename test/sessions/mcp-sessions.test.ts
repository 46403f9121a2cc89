/**
 * Every `execd mcp` server has its own default session (issue 26.2): two servers in two
 * workdirs, driven by the MCP SDK's own Client over stdio, share no cwd, exports or jobs, and each
 * names its session on stderr.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, onTestFinished } from 'vitest';
import { mcpSessionId } from '../../client/cli/mcp-session.js';
import { CLI, startDaemon, waitPidsGone, type TestDaemon } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';

async function mcpServer(daemon: TestDaemon, workdir: string, flags: string[] = []) {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--socket', daemon.socketPath, '--state-dir', daemon.stateDir, '--workdir', workdir, ...flags],
    cwd: daemon.dir,
    env,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: 'execd-test', version: '1.0.0' });
  await client.connect(transport);
  const pid = transport.pid!;
  onTestFinished(async () => {
    await client.close().catch(() => undefined);
    await waitPidsGone([pid]);
  });
  const bash = async (command: string, extra: Record<string, unknown> = {}) => {
    const result = (await client.callTool({
      name: 'bash',
      arguments: { command, description: 'A test command', ...extra },
    })) as CallToolResult;
    return (result.content[0] as { text: string }).text;
  };
  const tool = async (name: string, args: Record<string, unknown>) => {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
    return (result.content[0] as { text: string }).text;
  };
  return { bash, tool, stderr: () => stderr };
}

describe('execd mcp: a session per server', { timeout: 120_000 }, () => {
  it('two servers in two workdirs share no cwd and no jobs, and each names its session', async () => {
    const daemon = await startDaemon();
    const a = join(daemon.dir, 'project-a');
    const b = join(daemon.dir, 'project-b');
    mkdirSync(a);
    mkdirSync(b);
    const serverA = await mcpServer(daemon, a);
    const serverB = await mcpServer(daemon, b);
    expect(await serverA.bash('pwd')).toBe(`${a}\n`);
    expect(await serverB.bash('pwd')).toBe(`${b}\n`);
    const started = await serverA.bash('sleep 30', { run_in_background: true });
    console.log(started);
    const jobId = /bash-\d+/.exec(started)?.[0];
    expect(jobId).toBeDefined();
    expect(await serverB.tool('job_list', {})).not.toContain(jobId!);
    expect(await serverA.tool('job_list', {})).toContain(jobId!);
    await waitFor(() => serverA.stderr().includes('\n'), 'the startup line of server A');
    console.log(serverA.stderr().trim(), '|', serverB.stderr().trim());
    expect(serverA.stderr()).toContain(`execd mcp: session ${mcpSessionId(a)} (cwd ${a})\n`);
    expect(serverB.stderr()).toContain(`execd mcp: session ${mcpSessionId(b)} (cwd ${b})\n`);
    expect(mcpSessionId(a)).not.toBe(mcpSessionId(b));
  });

  it('two persistent servers in two workdirs share no exports', async () => {
    const daemon = await startDaemon();
    const a = join(daemon.dir, 'a');
    const b = join(daemon.dir, 'b');
    mkdirSync(a);
    mkdirSync(b);
    const serverA = await mcpServer(daemon, a, ['--persistent']);
    const serverB = await mcpServer(daemon, b, ['--persistent']);
    await serverA.bash('export Z=from-a; cd /');
    expect(await serverB.bash('echo "Z=$Z"; pwd')).toContain(`Z=\n${b}\n`);
    expect(await serverA.bash('echo "Z=$Z"; pwd')).toContain('Z=from-a\n/\n');
  });

  it('derives ids within the session id alphabet, distinct for same-named directories', () => {
    expect(mcpSessionId('/home/u/my project!')).toMatch(/^mcp-my_project_-[0-9a-f]{8}$/);
    expect(mcpSessionId('/x/app')).not.toBe(mcpSessionId('/y/app'));
    expect(mcpSessionId('/')).toMatch(/^mcp-root-[0-9a-f]{8}$/);
  });
});
