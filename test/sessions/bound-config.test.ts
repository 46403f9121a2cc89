/**
 * A `config/set` that narrows applies at once to every open session; one that widens applies only
 * to sessions opened afterwards — for foreground runs, terminal runs and sends, and background jobs.
 */
import { describe, expect, it } from 'vitest';
import {
  ConfigSet,
  SessionOpen,
  ShellResolve,
  ShellStart,
  TerminalOpen,
  TerminalRun,
  TerminalSend,
} from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { rejection } from '../helpers/rejection.js';

describe('the configuration an open session is bound by', { timeout: 60_000 }, () => {
  it('a lowered maxTimeoutMs caps an open session’s run at once; a raised one leaves it at its own cap', async () => {
    const daemon = await startDaemon({ config: { graceMs: 300 } });
    const client = await daemon.session('s1');
    await client.call(ConfigSet, { patch: { maxTimeoutMs: 2_000 } });
    const started = Date.now();
    const capped = await client.run({ sessionId: 's1', command: 'sleep 30', timeoutMs: 1e9 });
    expect(capped).toMatchObject({ timedOut: true, timeoutMs: 2_000 });
    expect(Date.now() - started).toBeLessThan(20_000);

    await client.call(ConfigSet, { patch: { maxTimeoutMs: 900_000 } });
    const own = await client.call(ShellResolve, { sessionId: 's1', command: 'true', timeoutMs: 1e12 });
    expect(own.timeoutMs).toBe(600_000);
    const ran = await client.run({ sessionId: 's1', command: 'true', timeoutMs: 1e12 });
    expect(ran).toMatchObject({ exitCode: 0, timeoutMs: 600_000 });
    // A session opened after the change gets the wider cap.
    await client.call(SessionOpen, { sessionId: 's2', cwd: daemon.dir });
    const wider = await client.call(ShellResolve, { sessionId: 's2', command: 'true', timeoutMs: 1e12 });
    expect(wider.timeoutMs).toBe(900_000);
  });

  it('the same for a terminal: its run and send answer the timeout that applied', async () => {
    const daemon = await startDaemon({ config: { graceMs: 300 } });
    const sessionId = 's1';
    const client = await daemon.session(sessionId);
    const { terminal } = await client.call(TerminalOpen, { sessionId });
    const terminalId = terminal.id;
    await client.call(ConfigSet, { patch: { maxTimeoutMs: 2_000 } });
    const capped = await client.call(TerminalRun, {
      sessionId,
      terminalId,
      command: 'sleep 30',
      timeoutMs: 1e9,
      idleMs: 60_000,
    });
    expect(capped).toMatchObject({ state: 'timed_out', timeoutMs: 2_000, interrupted: true });
    const sent = await client.call(TerminalSend, { sessionId, terminalId, text: 'true', submit: true, timeoutMs: 1e9 });
    expect(sent.timeoutMs).toBe(2_000);

    await client.call(ConfigSet, { patch: { maxTimeoutMs: 900_000 } });
    const own = await client.call(TerminalRun, { sessionId, terminalId, command: 'true', timeoutMs: 1e12 });
    expect(own).toMatchObject({ state: 'completed', exitCode: 0, timeoutMs: 600_000 });
    const defaulted = await client.call(TerminalRun, { sessionId, terminalId, command: 'true' });
    expect(defaulted.timeoutMs).toBe(120_000);
  });

  it('background runs turned off at run time refuse the next shell/start of an open session', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    await client.call(ShellStart, { sessionId: 's1', command: 'true' });
    await client.call(ConfigSet, { patch: { enableRunInBackground: false } });
    const refused = await rejection(client.call(ShellStart, { sessionId: 's1', command: 'true' }));
    expect(refused.errorName).toBe('BACKGROUND_DISABLED');
    const yielded = await rejection(client.run({ sessionId: 's1', command: 'true', yieldMs: 1_000 }));
    expect(yielded.errorName).toBe('BACKGROUND_DISABLED');
  });
});
