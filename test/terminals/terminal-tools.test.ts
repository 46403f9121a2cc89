/** The six terminal tools (createTerminalTools) end to end through a real daemon and real PTYs (SPEC §9.2). */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { SessionLimits } from '../../protocol/limits.js';
import { createTerminalTools, type TerminalToolDetails, type ToolResult } from '../../client/tool/index.js';
import { startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';

const IDLE_MS = 700;

async function terminalTools(daemon: TestDaemon, sessionId = 'agent', limits?: SessionLimits) {
  const tools = await createTerminalTools({
    client: await daemon.connect(),
    session: { id: sessionId, cwd: daemon.dir, ...(limits && { limits }) },
    idleMs: IDLE_MS,
  });
  const byName = Object.fromEntries(tools.tools.map((tool) => [tool.name, tool]));
  const call = (name: string, args: unknown = {}) => byName[name]!.execute(args);
  /** Opens a terminal and returns its id. */
  const open = async (args: Record<string, unknown> = {}) => {
    const opened = await call('terminal_open', args);
    expect(opened.isError).toBe(false);
    return (opened.details as Extract<TerminalToolDetails, { kind: 'open' }>).terminal.id;
  };
  return { tools, call, open };
}

const lastLine = (result: ToolResult) => result.text.split('\n').at(-1);

describe('the terminal tools through a real daemon', { timeout: 60_000 }, () => {
  it('offers six tools and the tool:terminal prompt section', async () => {
    const daemon = await startDaemon();
    const { tools } = await terminalTools(daemon);
    expect(tools.tools.map((tool) => tool.name)).toEqual([
      'terminal_open',
      'terminal_send',
      'terminal_read',
      'terminal_signal',
      'terminal_close',
      'terminal_list',
    ]);
    expect(tools.systemPrompt.name).toBe('tool:terminal');
    for (const tool of tools.tools)
      expect(tool.inputSchema).toMatchObject({ type: 'object', additionalProperties: false });
  });

  it('opens a bash terminal, sends a command, and ends the result with [ready: prompt]', async () => {
    const daemon = await startDaemon();
    const { call } = await terminalTools(daemon);
    const opened = await call('terminal_open', { name: 'work' });
    expect(lastLine(opened)).toMatch(new RegExp(`^\\[terminal term-\\d+ opened: bash .* in ${daemon.dir}\\]$`));
    const id = (opened.details as Extract<TerminalToolDetails, { kind: 'open' }>).terminal.id;
    const sent = await call('terminal_send', { terminal_id: id, text: 'cd /tmp && echo "in $PWD"' });
    expect(sent.text).toContain('in /tmp');
    expect(lastLine(sent)).toBe('[ready: prompt]');
    const list = await call('terminal_list');
    expect(list.text).toMatch(new RegExp(`^${id}\\s+running\\s+bash .*work$`, 'm'));
  });

  it("shows a command line's exit status before [ready: prompt], none for 0", async () => {
    const daemon = await startDaemon();
    const { call, open } = await terminalTools(daemon);
    const id = await open();
    const failed = await call('terminal_send', { terminal_id: id, text: 'echo before; (exit 3)' });
    expect(failed.text).toMatch(/^before$/m);
    expect(failed.text.split('\n').slice(-2)).toEqual(['[exit code: 3]', '[ready: prompt]']);
    expect(failed.details).toMatchObject({ kind: 'send', result: { waitReason: 'prompt', exitCode: 3 } });
    const fine = await call('terminal_send', { terminal_id: id, text: 'echo fine' });
    expect(fine.text).toMatch(/^fine$/m);
    expect(lastLine(fine)).toBe('[ready: prompt]');
    expect(fine.text).not.toContain('[exit code');
  });

  it('shows a process its memory limit killed before the readiness line; the shell lives on', async () => {
    const MiB = 1024 * 1024;
    const daemon = await startDaemon();
    const { call, open } = await terminalTools(daemon, 'agent', { memoryBytes: 64 * MiB });
    const id = await open();
    const killed = await call('terminal_send', {
      terminal_id: id,
      text: `/usr/bin/python3 -c 'x = bytearray(200 << 20); print("survived")'`,
    });
    expect(killed.text).not.toMatch(/^survived$/m);
    expect(killed.text.split('\n').slice(-3)).toEqual([
      '[killed: out of memory (limit 64 MiB)]',
      '[exit code: 137]',
      '[ready: prompt]',
    ]);
    const next = await call('terminal_send', { terminal_id: id, text: 'echo still-here' });
    expect(next.text).toMatch(/^still-here$/m);
    expect(lastLine(next)).toBe('[ready: prompt]');
    expect(next.text).not.toContain('[killed');
  });

  it('tells a program that waits for input, and a REPL opened with argv', async () => {
    const daemon = await startDaemon();
    const { call, open } = await terminalTools(daemon);
    const id = await open();
    const asked = await call('terminal_send', { terminal_id: id, text: 'read -p "pin: " p; echo "pin=$p"' });
    expect(lastLine(asked)).toBe('[ready: waiting for input]');
    const answered = await call('terminal_send', { terminal_id: id, text: '1234' });
    expect(answered.text).toContain('pin=1234');
    expect(lastLine(answered)).toBe('[ready: prompt]');

    const repl = await open({ argv: ['python3', '-q'], name: 'py' });
    const result = await call('terminal_send', { terminal_id: repl, text: 'print(6*7)' });
    expect(result.text).toContain('42');
    expect(lastLine(result)).toBe('[ready: waiting for input]');
  });

  it('says "not proven ready" for a silent command, and SIGINT brings the prompt back', async () => {
    const daemon = await startDaemon();
    const { call, open } = await terminalTools(daemon);
    const id = await open();
    const silent = await call('terminal_send', { terminal_id: id, text: 'sleep 30' });
    expect(lastLine(silent)).toBe(`[not proven ready: no output for ${IDLE_MS}ms]`);
    const signalled = await call('terminal_signal', { terminal_id: id, signal: 'SIGINT' });
    expect(signalled.text).toMatch(new RegExp(`^sent SIGINT to the foreground process group \\d+ of ${id}$`));
    const back = await call('terminal_send', { terminal_id: id, text: 'echo alive' });
    expect(back.text).toContain('alive');
    expect(lastLine(back)).toBe('[ready: prompt]');
  });

  it('ends a send at its timeout with [timed out after <ms>ms]', async () => {
    const daemon = await startDaemon();
    const { call, open } = await terminalTools(daemon);
    const id = await open();
    const busy = await call('terminal_send', {
      terminal_id: id,
      text: 'for i in $(seq 1 100); do echo tick; sleep 0.1; done',
      timeout_ms: 600,
    });
    expect(busy.text).toContain('tick');
    expect(lastLine(busy)).toBe('[timed out after 600ms]');
  });

  it('reads new output since the last send, then (no new output), and the screen of less', async () => {
    const daemon = await startDaemon();
    const { call, open } = await terminalTools(daemon);
    const id = await open();
    await call('terminal_send', { terminal_id: id, text: '(sleep 0.3; echo later) &' });
    const later = await waitFor(async () => {
      const read = await call('terminal_read', { terminal_id: id });
      return read.text.includes('later') ? read : undefined;
    }, 'the background echo');
    expect(lastLine(later)).toBe(`[terminal ${id}: running]`);
    expect((await call('terminal_read', { terminal_id: id })).text).toBe(`(no new output)\n[terminal ${id}: running]`);

    const file = join(daemon.dir, 'long.txt');
    writeFileSync(file, Array.from({ length: 200 }, (_, i) => `row ${i + 1}`).join('\n'));
    await call('terminal_send', { terminal_id: id, text: `less ${file}` });
    const screen = await waitFor(async () => {
      const read = await call('terminal_read', { terminal_id: id, view: 'screen' });
      return read.text.includes('row 1\n') ? read : undefined;
    }, 'less to draw its first screen');
    expect(screen.text).toContain('row 2\n');
    expect(screen.text).not.toContain('row 150');
    expect(lastLine(screen)).toBe(`[terminal ${id}: running less]`);
    const quit = await call('terminal_send', { terminal_id: id, text: 'q', submit: false });
    expect(lastLine(quit)).toBe('[ready: prompt]');
  });

  it('reports the exit of the program, closes, and answers a second close as a no-op', async () => {
    const daemon = await startDaemon();
    const { call, open } = await terminalTools(daemon);
    const id = await open();
    const exited = await call('terminal_send', { terminal_id: id, text: 'exit 4' });
    expect(lastLine(exited)).toBe('[terminal exited: code 4]');
    const other = await open();
    expect(await call('terminal_close', { terminal_id: other })).toMatchObject({
      text: `closed terminal ${other}`,
      isError: false,
    });
    expect((await call('terminal_close', { terminal_id: other })).text).toBe(`terminal ${other} had already exited`);
  });

  it('refuses bad arguments before the daemon and reports daemon errors as error results', async () => {
    const daemon = await startDaemon();
    const { call } = await terminalTools(daemon);
    expect(await call('terminal_send', { terminal_id: '', text: 'x' })).toMatchObject({
      isError: true,
      text: 'invalid terminal_id: expected a non-empty string',
    });
    expect(await call('terminal_signal', { terminal_id: 'term-1', signal: 'SIGHUP' })).toMatchObject({
      isError: true,
      text: 'invalid signal: expected one of SIGINT, SIGQUIT, SIGTSTP, SIGTERM, SIGKILL, got "SIGHUP"',
    });
    const unknown = await call('terminal_send', { terminal_id: 'term-999', text: 'x' });
    expect(unknown.isError).toBe(true);
    expect(unknown.details).toMatchObject({ kind: 'error' });
    expect(unknown.text).toContain('term-999');
    expect((await call('terminal_list')).text).toBe('(no terminals)');
  });

  it('tells every tool set on one connection about its own terminal exits, until disposed', async () => {
    const daemon = await startDaemon();
    const client = await daemon.connect();
    const exits: Record<string, string[]> = { a: [], b: [] };
    const make = (sessionId: string, seen: string[]) =>
      createTerminalTools({
        client,
        session: { id: sessionId, cwd: daemon.dir },
        onTerminalExited: (terminal) => seen.push(terminal.id),
      });
    const a = await make('agent-a', exits.a!);
    const b = await make('agent-b', exits.b!);
    const open = async (tools: typeof a) => {
      const opened = await tools.tools[0]!.execute({});
      return (opened.details as Extract<TerminalToolDetails, { kind: 'open' }>).terminal.id;
    };
    const [ta, tb] = [await open(a), await open(b)];
    await a.tools[1]!.execute({ terminal_id: ta, text: 'exit 0' });
    await b.tools[1]!.execute({ terminal_id: tb, text: 'exit 0' });
    await waitFor(() => exits.a!.length === 1 && exits.b!.length === 1, 'both exit notices');
    expect(exits).toEqual({ a: [ta], b: [tb] });
    a.dispose();
    const tb2 = await open(b);
    await b.tools[1]!.execute({ terminal_id: tb2, text: 'exit 0' });
    await waitFor(() => exits.b!.length === 2, 'the second exit notice of b');
    expect(exits.a).toEqual([ta]);
  });

  it("cannot touch another session's terminal", async () => {
    const daemon = await startDaemon();
    const a = await terminalTools(daemon, 'agent-a');
    const b = await terminalTools(daemon, 'agent-b');
    const id = await a.open();
    const refused = await b.call('terminal_send', { terminal_id: id, text: 'echo hi' });
    expect(refused.isError).toBe(true);
    expect(refused.details).toMatchObject({ kind: 'error', errorName: 'FORBIDDEN' });
  });
});
