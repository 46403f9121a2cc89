/**
 * Terminal lifecycle against a real daemon: close, session close, daemon shutdown and a crash plus
 * restart leave no process of any terminal behind (a disowned child that ignores TERM included);
 * busy, ownership, limits, status counts and bad input.
 */
import { describe, expect, test } from 'vitest';
import {
  DaemonStatus,
  SessionClose,
  SessionOpen,
  TerminalClose,
  TerminalList,
  TerminalOpen,
  TerminalRead,
  TerminalResize,
  TerminalRun,
  TerminalSend,
  TerminalWrite,
} from '../../protocol/methods.js';
import { startDaemon, waitPidsGone } from '../helpers/daemon.js';
import { pidsWithArgument } from '../helpers/procs.js';
import { waitFor } from '../helpers/wait.js';
import { shellFixture, type ShellFixture } from './terminal-helpers.js';

/** Starts, in the terminal, a background job and a disowned child that ignores TERM and HUP; returns their pids. */
async function plantProcesses(fixture: ShellFixture): Promise<{ token: string; pids: number[] }> {
  const token = `9${Math.floor(Math.random() * 1e6)}`;
  const result = await fixture.run(`sleep ${token}1 & (trap '' TERM HUP; exec sleep ${token}2) & disown; echo planted`);
  expect(result.output).toContain('planted');
  const pids = await waitFor(() => {
    const found = pidsWithArgument(token);
    return found.length === 2 ? found : undefined;
  }, 'both planted processes');
  return { token, pids };
}

describe('terminal lifecycle', () => {
  test('terminal/close kills everything on the terminal; a second close is a no-op', async () => {
    const fixture = await shellFixture();
    const { client, sessionId, terminalId } = fixture;
    const { pids } = await plantProcesses(fixture);
    const shellPid = (await client.call(TerminalList, { sessionId }))[0]!.pid;
    expect(await client.call(TerminalClose, { sessionId, terminalId })).toEqual({ closed: true });
    expect(await waitPidsGone([...pids, shellPid], 1_000)).toEqual([]);
    expect(await client.call(TerminalClose, { sessionId, terminalId })).toEqual({ closed: false });
    const [listed] = await client.call(TerminalList, { sessionId });
    expect(listed).toMatchObject({ status: 'exited', detail: 'closed by terminal/close' });
  });

  test('session/close kills its terminals and forgets them', async () => {
    const fixture = await shellFixture();
    const { client, sessionId, daemon } = fixture;
    const { pids } = await plantProcesses(fixture);
    const closed = await client.call(SessionClose, { sessionId });
    expect(closed.closedTerminals).toBe(1);
    expect(await waitPidsGone(pids, 1_000)).toEqual([]);
    await client.call(SessionOpen, { sessionId, cwd: daemon.dir });
    expect(await client.call(TerminalList, { sessionId })).toEqual([]);
  });

  test('daemon SIGTERM leaves no process of any terminal', async () => {
    const fixture = await shellFixture();
    const { pids } = await plantProcesses(fixture);
    expect(await fixture.daemon.stop()).toBe(0);
    expect(await waitPidsGone(pids, 1_000)).toEqual([]);
  });

  test('kill -9 and a restart: the terminal is listed exited, its processes are killed, ids continue', async () => {
    const fixture = await shellFixture();
    const { daemon, sessionId } = fixture;
    const { pids } = await plantProcesses(fixture);
    await daemon.crash();
    const restarted = await startDaemon({ stateDir: daemon.stateDir, config: { graceMs: 500 } });
    const client = await restarted.session(sessionId);
    const [listed] = await client.call(TerminalList, { sessionId });
    expect(listed).toMatchObject({
      id: 'term-1',
      status: 'exited',
      detail: 'daemon restarted while the terminal was open',
    });
    expect(await waitPidsGone(pids, 10_000)).toEqual([]);
    const next = await client.call(TerminalOpen, { sessionId });
    expect(next.terminal.id).toBe('term-2');
  });

  test('a second concurrent send is TERMINAL_BUSY; another session gets FORBIDDEN', async () => {
    const { client, daemon, sessionId, terminalId } = await shellFixture();
    const first = client.call(TerminalRun, { sessionId, terminalId, command: 'sleep 1; echo one' });
    await waitFor(
      async () => (await client.call(TerminalList, { sessionId }))[0]!.busy,
      'the run to hold the terminal',
    );
    await expect(
      client.call(TerminalSend, { sessionId, terminalId, text: 'echo two', submit: true }),
    ).rejects.toMatchObject({
      errorName: 'TERMINAL_BUSY',
      code: -32010,
    });
    expect((await first).output).toBe('one\n');
    const stranger = await daemon.session('s2');
    await expect(stranger.call(TerminalRead, { sessionId: 's2', terminalId })).rejects.toMatchObject({
      errorName: 'FORBIDDEN',
    });
    await expect(stranger.call(TerminalClose, { sessionId: 's2', terminalId })).rejects.toMatchObject({
      errorName: 'FORBIDDEN',
    });
  });

  test('over maxTerminalsPerSession: LIMIT_EXCEEDED and nothing opened; daemon/status counts terminals', async () => {
    const daemon = await startDaemon({ config: { maxTerminalsPerSession: 2 } });
    const client = await daemon.session('s1');
    expect(client.info.capabilities.terminals).toBe(true);
    await client.call(TerminalOpen, { sessionId: 's1' });
    await client.call(TerminalOpen, { sessionId: 's1', argv: ['cat'] });
    await expect(client.call(TerminalOpen, { sessionId: 's1' })).rejects.toMatchObject({
      errorName: 'LIMIT_EXCEEDED',
      message: 'maxTerminalsPerSession limit reached (2)',
    });
    expect(await client.call(TerminalList, { sessionId: 's1' })).toHaveLength(2);
    const status = await client.call(DaemonStatus, {});
    expect(status.terminals).toEqual({ running: 2, exited: 0 });
    expect(status.sessions[0]!.runningTerminals).toBe(2);
    expect(status.processes).toBeGreaterThanOrEqual(2);
  });

  test('terminals count against maxProcesses', async () => {
    const daemon = await startDaemon({ config: { maxProcesses: 1 } });
    const client = await daemon.session('s1');
    await client.call(TerminalOpen, { sessionId: 's1' });
    await expect(client.run({ sessionId: 's1', command: 'true' })).rejects.toMatchObject({
      errorName: 'LIMIT_EXCEEDED',
      message: 'maxProcesses limit reached (1)',
    });
    await expect(client.call(TerminalOpen, { sessionId: 's1' })).rejects.toMatchObject({
      errorName: 'LIMIT_EXCEEDED',
      message: 'maxProcesses limit reached (1)',
    });
    const other = await daemon.session('s2');
    expect((await other.call(TerminalList, { all: true })).map((terminal) => terminal.ownerSession)).toEqual(['s1']);
    expect(await other.call(TerminalList, { sessionId: 's2' })).toEqual([]);
  });

  test('bad input gets a clear error and changes nothing', async () => {
    const { client, sessionId, terminalId, run } = await shellFixture({ config: { maxTerminalInputBytes: 1_000 } });
    const rejects = (promise: Promise<unknown>, errorName: string, message: RegExp) =>
      expect(promise).rejects.toMatchObject({ errorName, message: expect.stringMatching(message) as unknown });
    await rejects(
      client.call(TerminalRead, { sessionId, terminalId: 'term-999' }),
      'JOB_NOT_FOUND',
      /no terminal term-999/,
    );
    await rejects(
      client.call(TerminalRead, { sessionId, terminalId: 'bash-1' }),
      'INVALID_PARAMS',
      /terminalId must look like term-<n>/,
    );
    await rejects(
      client.call(TerminalResize, { sessionId, terminalId, cols: -5, rows: 24 }),
      'INVALID_PARAMS',
      /cols must be an integer from 1 to 1000/,
    );
    await rejects(
      client.call(TerminalSend, { sessionId, terminalId, text: 'x'.repeat(5_000) }),
      'LIMIT_EXCEEDED',
      /text is larger than maxTerminalInputBytes \(1000\)/,
    );
    await rejects(
      client.call(TerminalWrite, { sessionId, terminalId, data: 'a\ud800b' }),
      'INVALID_PARAMS',
      /data must be valid Unicode text/,
    );
    await rejects(
      client.call(TerminalWrite, { sessionId, terminalId, data: [1, 2, 3] as unknown as string }),
      'INVALID_PARAMS',
      /data must be a string/,
    );
    await rejects(
      client.call(TerminalOpen, { sessionId, argv: ['echo', 'a\0b'] }),
      'INVALID_PARAMS',
      /argv\.1 must not contain NUL/,
    );
    await rejects(
      client.call(TerminalRun, { sessionId, terminalId, command: 'echo a\0b' }),
      'INVALID_PARAMS',
      /command must not contain NUL/,
    );
    await rejects(client.call(TerminalOpen, { sessionId, cwd: '/no/such/dir' }), 'SPAWN_FAILED', /\/no\/such\/dir/);
    await rejects(
      client.call(TerminalOpen, { sessionId, argv: ['no-such-program-x'] }),
      'SPAWN_FAILED',
      /cannot start no-such-program-x: no such executable/,
    );
    expect(await client.call(TerminalList, { sessionId })).toHaveLength(1);
    // Control bytes are valid input: written as they are.
    expect(await client.call(TerminalWrite, { sessionId, terminalId, data: '\x15' })).toEqual({ written: 1 });
    // Typed input since the prompt: a run types nothing until the shell is at its prompt again.
    expect(await run('echo fine')).toMatchObject({ state: 'not_at_prompt', output: '' });
    expect(await client.call(TerminalSend, { sessionId, terminalId, text: '', submit: true })).toMatchObject({
      waitReason: 'prompt',
    });
    expect((await run('echo fine')).output).toBe('fine\n');
  });
});
