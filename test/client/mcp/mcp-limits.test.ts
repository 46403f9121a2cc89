/**
 * `execd mcp` under hostile input (issue 27, points 10, 20 and 22): a message over 10 MiB and
 * arguments nested 5,000 deep are refused with an error naming the bound and the server keeps
 * serving; a command past the kernel's argument limit is refused by name, not `spawn E2BIG`; the
 * `bash` tool refuses keys its schema does not declare.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult, JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, onTestFinished } from 'vitest';
import { MAX_COMMAND_BYTES } from '../../../protocol/command.js';
import { CLI, startDaemon, waitPidsGone, type TestDaemon } from '../../helpers/daemon.js';
import { waitFor } from '../../helpers/wait.js';

async function mcpClient(daemon: TestDaemon) {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--socket', daemon.socketPath, '--state-dir', daemon.stateDir],
    cwd: daemon.dir,
    env,
    stderr: 'pipe',
  });
  const client = new Client({ name: 'execd-test', version: '1.0.0' });
  await client.connect(transport);
  const pid = transport.pid!;
  onTestFinished(async () => {
    await client.close().catch(() => undefined);
    await waitPidsGone([pid]);
  });
  const call = async (args: Record<string, unknown>) =>
    (await client.callTool({ name: 'bash', arguments: args }, undefined, { timeout: 60_000 })) as CallToolResult;
  const text = (result: CallToolResult) => (result.content[0] as { text: string }).text;
  return { call, text, transport };
}

const MiB = 1024 * 1024;

describe('execd mcp limits', () => {
  it('refuses a message over 10 MiB with an error and keeps serving', async () => {
    const daemon = await startDaemon();
    const { call, text } = await mcpClient(daemon);
    const huge = { command: `echo ${'x'.repeat(11 * MiB)}`, description: 'An oversized message' };
    const started = performance.now();
    const refused = await call(huge).catch((error: Error) => error);
    console.log(
      `11 MiB message: refused in ${(performance.now() - started).toFixed(0)} ms: ${(refused as Error).message}`,
    );
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toContain('execd mcp reads messages of at most 10485760 bytes');
    const after = await call({ command: 'echo still here', description: 'Check the server lives' });
    expect(text(after)).toBe('still here\n');
  });

  it('refuses arguments nested 5,000 deep with a clear message and keeps serving', async () => {
    const daemon = await startDaemon();
    const { call, text, transport } = await mcpClient(daemon);
    // Written as text: a client that builds the value first overflows its own stack serializing it.
    const nested = `${'{"inner":'.repeat(5_000)}"bottom"${'}'.repeat(5_000)}`;
    const answers: unknown[] = [];
    const dispatch = transport.onmessage;
    transport.onmessage = (message: JSONRPCMessage) => {
      answers.push(message);
      dispatch?.(message);
    };
    const line = `{"jsonrpc":"2.0","id":"deep-1","method":"tools/call","params":{"name":"bash","arguments":{"command":"true","description":"Deep arguments","extra":${nested}}}}`;
    // The server's stdin, as the transport holds it: the line goes out byte for byte.
    (transport as unknown as { _process: { stdin: NodeJS.WritableStream } })._process.stdin.write(`${line}\n`);
    const answer = await waitFor(
      () => answers.find((message) => (message as { id?: unknown }).id === 'deep-1'),
      'the answer to the deep message',
    );
    console.log(`arguments nested 5000 deep: ${JSON.stringify(answer)}`);
    expect(answer).toMatchObject({ error: { code: -32600 } });
    expect(JSON.stringify(answer)).toContain('nested more than 64 levels deep');
    expect(text(await call({ command: 'echo fine', description: 'Check the server lives' }))).toBe('fine\n');
  });

  it('refuses a command past the kernel argument limit by name; one at the limit runs', async () => {
    const daemon = await startDaemon();
    const { call, text } = await mcpClient(daemon);
    const tooLong = await call({ command: `: ${'y'.repeat(200 * 1024)}`, description: 'A 200 KiB command' });
    console.log(`200 KiB command: ${text(tooLong).slice(0, 200)}`);
    expect(tooLong.isError).toBe(true);
    expect(text(tooLong)).toContain(`at most ${MAX_COMMAND_BYTES} bytes`);
    expect(text(tooLong)).not.toContain('E2BIG');
    const prefix = 'echo -n ok; : ';
    const atLimit = await call({
      command: prefix + 'z'.repeat(MAX_COMMAND_BYTES - prefix.length),
      description: 'A command at the limit',
    });
    expect(text(atLimit)).toBe('ok');
  });

  it('the bash tool refuses keys its schema does not declare', async () => {
    const daemon = await startDaemon();
    const { call, text } = await mcpClient(daemon);
    const refused = await call({ command: 'echo ran', description: 'Extra key', sandbox: 'none' });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toMatch(/^invalid arguments: unknown key "sandbox" \(accepted: command, description/);
  });
});
