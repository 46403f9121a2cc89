/**
 * Terminal events and edges against a real daemon: terminal/exited, an argv terminal, resize, the
 * idle close, and a machine where no PTY can be opened (TERMINALS_UNAVAILABLE).
 */
import { describe, expect, test } from 'vitest';
import {
  TerminalExited,
  TerminalList,
  TerminalOpen,
  TerminalRead,
  TerminalResize,
  TerminalRun,
  TerminalSend,
} from '../../protocol/methods.js';
import type { TerminalExitedParams } from '../../protocol/terminal.js';
import { startDaemon, waitPidsGone } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';

describe('terminal events and edges', () => {
  test('an argv terminal: stdin_read readiness, resize, terminal/exited when its program ends', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const exits: TerminalExitedParams[] = [];
    client.rpc.onNotification(TerminalExited, (params) => exits.push(params));
    const opened = await client.call(TerminalOpen, {
      sessionId: 's1',
      argv: ['cat'],
      name: 'echo',
      cols: 100,
      rows: 30,
    });
    expect(opened.terminal).toMatchObject({ name: 'echo', argv: ['cat'], cols: 100, rows: 30, status: 'running' });
    const terminalId = opened.terminal.id;
    const sent = await client.call(TerminalSend, { sessionId: 's1', terminalId, text: 'ping', submit: true });
    expect(sent.waitReason).toBe('stdin_read');
    expect(sent.output).toBe('ping\nping\n');
    await expect(client.call(TerminalRun, { sessionId: 's1', terminalId, command: 'true' })).rejects.toMatchObject({
      errorName: 'INVALID_PARAMS',
    });
    const resized = await client.call(TerminalResize, { sessionId: 's1', terminalId, cols: 40, rows: 10 });
    expect(resized).toMatchObject({ cols: 40, rows: 10 });
    const sizeShell = await client.call(TerminalOpen, { sessionId: 's1' });
    await client.call(TerminalResize, { sessionId: 's1', terminalId: sizeShell.terminal.id, cols: 40, rows: 10 });
    const size = await client.call(TerminalRun, {
      sessionId: 's1',
      terminalId: sizeShell.terminal.id,
      command: 'stty size',
    });
    expect(size.output).toBe('10 40\n');
    const eof = await client.call(TerminalSend, { sessionId: 's1', terminalId, text: '\x04' });
    expect(eof.waitReason).toBe('session_exit');
    await waitFor(() => exits.length === 1, 'terminal/exited');
    expect(exits[0]).toMatchObject({ sessionId: 's1', terminal: { id: terminalId, status: 'exited', exitCode: 0 } });
  });

  test('terminalIdleCloseMs closes an unused terminal whose shell is at its prompt', async () => {
    const daemon = await startDaemon({ config: { terminalIdleCloseMs: 1_500, graceMs: 500 } });
    const client = await daemon.session('s1');
    const idle = await client.call(TerminalOpen, { sessionId: 's1' });
    const busy = await client.call(TerminalOpen, { sessionId: 's1' });
    const running = await client.call(TerminalRun, {
      sessionId: 's1',
      terminalId: busy.terminal.id,
      command: 'sleep 30',
      idleMs: 200,
    });
    expect(running.state).toBe('idle');
    const listed = await waitFor(async () => {
      const all = await client.call(TerminalList, { sessionId: 's1' });
      return all.find((terminal) => terminal.id === idle.terminal.id)?.status === 'exited' ? all : undefined;
    }, 'the idle terminal to close');
    expect(listed.find((terminal) => terminal.id === idle.terminal.id)?.detail).toBe(
      'closed after terminalIdleCloseMs without use',
    );
    // The terminal with a command in its foreground stays.
    expect(listed.find((terminal) => terminal.id === busy.terminal.id)?.status).toBe('running');
    expect(await waitPidsGone([idle.terminal.pid], 1_000)).toEqual([]);
  });

  test('no PTY can be opened: capabilities.terminals is false and terminal methods answer TERMINALS_UNAVAILABLE', async () => {
    const daemon = await startDaemon({
      launcher: ['unshare', '-m', '--', 'sh', '-c', 'mount --bind /dev/null /dev/ptmx && exec "$@"', 'sh'],
    });
    const client = await daemon.session('s1');
    expect(client.info.capabilities.terminals).toBe(false);
    await expect(client.call(TerminalOpen, { sessionId: 's1' })).rejects.toMatchObject({
      errorName: 'TERMINALS_UNAVAILABLE',
      code: -32011,
      message: expect.stringMatching(/^terminals are unavailable: cannot open a PTY/) as unknown,
    });
    await expect(client.call(TerminalRead, { sessionId: 's1', terminalId: 'term-1' })).rejects.toMatchObject({
      errorName: 'TERMINALS_UNAVAILABLE',
    });
    // One-shot runs still work.
    expect((await client.run({ sessionId: 's1', command: 'echo ok' })).stdout.text).toBe('ok\n');
  });

  test('a wait in place before the write does not count: text without Enter to a waiting cat ends idle', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const { terminal } = await client.call(TerminalOpen, { sessionId: 's1', argv: ['cat'] });
    const p = { sessionId: 's1', terminalId: terminal.id };
    // cat's read (canonical mode) stays blocked through a partial line: the same wait as before.
    const partial = await client.call(TerminalSend, { ...p, text: 'abc', idleMs: 800 });
    expect(partial.waitReason).toBe('inferred_idle');
    const line = await client.call(TerminalSend, { ...p, text: '', submit: true });
    expect(line.waitReason).toBe('stdin_read');
    expect(line.output).toBe('\nabc\n');
  });

  test('$/cancelRequest of a send interrupts the foreground and answers with what was read', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const { terminal } = await client.call(TerminalOpen, { sessionId: 's1' });
    const p = { sessionId: 's1', terminalId: terminal.id };
    const controller = new AbortController();
    const pending = client.call(
      TerminalSend,
      { ...p, text: 'echo begun; sleep 30', submit: true, idleMs: 20_000 },
      { signal: controller.signal },
    );
    await waitFor(async () => /^begun/m.test((await client.call(TerminalRead, p)).text), 'the command to start');
    controller.abort();
    const result = await pending;
    expect(result.waitReason).toBe('prompt');
    expect(result.output).toContain('begun');
    expect((await client.call(TerminalRun, { ...p, command: 'echo ok' })).output).toBe('ok\n');
  });

  test('a session keeps at most maxTerminalsPerSession exited terminals listed', async () => {
    const daemon = await startDaemon({ config: { maxTerminalsPerSession: 2 } });
    const client = await daemon.session('s1');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { terminal } = await client.call(TerminalOpen, { sessionId: 's1', argv: ['cat'] });
      ids.push(terminal.id);
      await client.call(TerminalSend, { sessionId: 's1', terminalId: terminal.id, text: '\x04' });
    }
    const listed = await waitFor(async () => {
      const all = await client.call(TerminalList, { sessionId: 's1' });
      return all.length === 2 && all.every((terminal) => terminal.status === 'exited') ? all : undefined;
    }, 'the oldest exited terminal to be forgotten');
    expect(listed.map((terminal) => terminal.id)).toEqual(ids.slice(1));
  });
});
