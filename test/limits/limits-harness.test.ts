/**
 * Resource limits come from the harness, never from the model (SPEC §17): the library takes them as
 * session facts and trusted per-call inputs, `execd mcp` as flags, and the model-facing tool
 * schema has no field for them. On this machine's real cgroups.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createShellTools } from '../../client/tool/index.js';
import { DaemonStatus } from '../../protocol/methods.js';
import { CLI, startDaemon, waitPidsGone } from '../helpers/daemon.js';

const MiB = 1024 * 1024;
const ALLOCATE_200 = '/usr/bin/python3 -c \'x = bytearray(200 << 20); print("survived")\'';

describe('resource limits from the harness', () => {
  it('the library: session limits and a trusted per-call limit; the tool schema is unchanged', async () => {
    const daemon = await startDaemon();
    const client = await daemon.connect();
    const limited = await createShellTools({
      client,
      session: { id: 's1', cwd: daemon.dir, limits: { memoryBytes: 64 * MiB, pids: 64 } },
    });
    const plain = await createShellTools({ client, session: { id: 's2', cwd: daemon.dir } });
    expect(limited.shell.inputSchema).toEqual(plain.shell.inputSchema);
    expect(JSON.stringify(limited.shell.inputSchema)).not.toContain('limit');

    const killed = await limited.shell.execute({ command: ALLOCATE_200, description: 'Allocate' });
    expect(killed.text).toBe('(no output)\n[killed: out of memory (limit 64 MiB)]\n[killed by signal: SIGKILL]');
    expect(killed.details).toMatchObject({ kind: 'run', result: { oomKilled: true, oomLimitBytes: 64 * MiB } });
    // A trusted input of one call lowers it further; the model's arguments cannot name it.
    const lower = await plain.shell.execute(
      { command: ALLOCATE_200, description: 'Allocate' },
      { trusted: { limits: { memoryBytes: 32 * MiB } } },
    );
    expect(lower.text).toBe('(no output)\n[killed: out of memory (limit 32 MiB)]\n[killed by signal: SIGKILL]');
    const refused = await plain.shell.execute({ command: 'true', description: 'x', limits: { memoryBytes: 1 } });
    expect(refused.isError).toBe(true);
    const status = await client.call(DaemonStatus, {});
    expect(status.sessions.find((session) => session.sessionId === 's1')?.limits).toEqual({
      memoryBytes: 64 * MiB,
      pids: 64,
    });
  });

  it('execd mcp --memory: the session of the served tools is limited', async () => {
    const daemon = await startDaemon();
    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        CLI,
        'mcp',
        '--socket',
        daemon.socketPath,
        '--state-dir',
        daemon.stateDir,
        '--session',
        'mcp-limits',
        '--memory',
        '48M',
        '--session-memory',
        '1G',
      ],
      cwd: daemon.dir,
      env,
      stderr: 'pipe',
    });
    const mcp = new Client({ name: 'execd-test', version: '1.0.0' });
    await mcp.connect(transport);
    const pid = transport.pid!;
    onTestFinished(async () => {
      await mcp.close().catch(() => undefined);
      await waitPidsGone([pid]);
    });
    const tools = await mcp.listTools();
    expect(JSON.stringify(tools.tools.find((tool) => tool.name === 'bash')?.inputSchema)).not.toContain('limit');
    const result = (await mcp.callTool({
      name: 'bash',
      arguments: { command: ALLOCATE_200, description: 'Allocate' },
    })) as CallToolResult;
    expect((result.content[0] as { text: string }).text).toBe(
      '(no output)\n[killed: out of memory (limit 48 MiB)]\n[killed by signal: SIGKILL]',
    );
    const status = await (await daemon.connect()).call(DaemonStatus, {});
    expect(status.sessions.find((session) => session.sessionId === 'mcp-limits')?.limits).toEqual({
      memoryBytes: 48 * MiB,
      sessionMemoryBytes: 1024 * MiB,
    });
  });
});
