/**
 * Readiness against a real daemon and a real PTY: programs waiting for typed input are told apart
 * from busy or piped ones through /proc, interrupts return to the prompt, timeouts and cancellation.
 */
import { describe, expect, test } from 'vitest';
import { TerminalList, TerminalRead, TerminalRun, TerminalSend, TerminalSignal } from '../../protocol/methods.js';
import { waitFor } from '../helpers/wait.js';
import { shellFixture } from './terminal-helpers.js';

describe('readiness tiers', () => {
  test('read x waits for input within a second; sending hi completes it at the prompt', async () => {
    const { run, client, sessionId, terminalId } = await shellFixture();
    const started = Date.now();
    const waiting = await run('read x; echo "got $x"');
    console.log(`read x reported waiting_for_input after ${Date.now() - started} ms`);
    expect(waiting.state).toBe('waiting_for_input');
    const sent = await client.call(TerminalSend, { sessionId, terminalId, text: 'hi', submit: true });
    expect(sent.waitReason).toBe('prompt');
    expect(sent.output).toContain('got hi');
    expect((await run('echo still here')).output).toBe('still here\n');
  });

  test('python3 input() reversal, a getpass prompt and the node REPL wait for input', async () => {
    const { run, client, sessionId, terminalId } = await shellFixture();
    const send = (text: string) => client.call(TerminalSend, { sessionId, terminalId, text, submit: true });

    expect((await run(`python3 -c 'print(input()[::-1])'`)).state).toBe('waiting_for_input');
    const reversed = await send('abc');
    expect(reversed.waitReason).toBe('prompt');
    expect(reversed.output).toContain('cba');

    const secret = await run(`python3 -c 'import getpass; print(len(getpass.getpass("pw: ")))'`);
    expect(secret).toMatchObject({ state: 'waiting_for_input' });
    expect(secret.output).toContain('pw: ');
    const typed = await send('hunter2');
    expect(typed.waitReason).toBe('prompt');
    expect(typed.output).toContain('7');
    expect(typed.output).not.toContain('hunter2');

    const repl = await run('node');
    expect(repl.state).toBe('waiting_for_input');
    const answer = await send('6*7');
    expect(answer.waitReason).toBe('stdin_read');
    expect(answer.output).toContain('42');
    expect((await send('.exit')).waitReason).toBe('prompt');
  });

  test('sleep 30 | cat is never waiting for input: it goes idle', async () => {
    const { run, client, sessionId, terminalId } = await shellFixture();
    const result = await run('sleep 30 | cat', { idleMs: 1_500 });
    expect(result.state).toBe('idle');
    expect(result.terminal.foreground?.pgid).toBeGreaterThan(0);
    const stopped = await client.call(TerminalSignal, { sessionId, terminalId, signal: 'SIGINT' });
    expect(stopped.delivered).toBe(true);
  });

  test('a busy loop is interrupted by terminal/signal SIGINT and the shell still works', async () => {
    const { run, client, sessionId, terminalId } = await shellFixture();
    const busy = await run('while :; do :; done', { idleMs: 500 });
    expect(busy.state).toBe('idle');
    const signalled = await client.call(TerminalSignal, { sessionId, terminalId, signal: 'SIGINT' });
    expect(signalled.delivered).toBe(true);
    const after = await client.call(TerminalSend, { sessionId, terminalId, text: 'echo alive', submit: true });
    expect(after.waitReason).toBe('prompt');
    expect((await run('echo $((1+2))')).output).toBe('3\n');
  });

  test('a send right after a signal is not ended by the prompt the signal brings back', async () => {
    const { run, client, sessionId, terminalId } = await shellFixture();
    // The shell reads typed input 0.3 s after each prompt marker (a busy wait of builtins: the shell
    // keeps the foreground), so what a send typed runs in a later chunk than that marker; and the
    // command returns to the prompt 0.5 s after SIGINT, so that prompt comes after the send was typed.
    const pause = 't=$(( ${EPOCHREALTIME/./} + 300000 )); while (( ${EPOCHREALTIME/./} < t )); do :; done';
    await run(`PROMPT_COMMAND="$PROMPT_COMMAND"'; ${pause}'`);
    const slow = await run(`bash -c 'trap "sleep 0.5; exit 130" INT; sleep 30 & wait'`, { idleMs: 300 });
    expect(slow.state).toBe('idle');
    expect((await client.call(TerminalSignal, { sessionId, terminalId, signal: 'SIGINT' })).delivered).toBe(true);
    const after = await client.call(TerminalSend, {
      sessionId,
      terminalId,
      text: 'echo alive-$((40+2))',
      submit: true,
    });
    expect(after.waitReason).toBe('prompt');
    expect(after.output).toContain('alive-42');
  });

  test('timeout: SIGINT brings the prompt back (interrupted) and the shell keeps its state', async () => {
    const { run } = await shellFixture();
    await run('export KEEP=yes');
    const result = await run('sleep 30', { timeoutMs: 800 });
    expect(result).toMatchObject({ state: 'timed_out', interrupted: true });
    expect(result.terminal.status).toBe('running');
    expect((await run('echo $KEEP')).output).toBe('yes\n');
  });

  test('timeout: a program that ignores SIGINT is ended with SIGTERM to its group; the shell stays', async () => {
    const { run, client, sessionId } = await shellFixture();
    const ignoring = `python3 -c 'import signal,time; signal.signal(signal.SIGINT, signal.SIG_IGN); print("armed", flush=True); time.sleep(60)'`;
    const result = await run(ignoring, { timeoutMs: 1_500 });
    expect(result).toMatchObject({ state: 'timed_out', interrupted: true });
    expect(result.stoppedWith).toMatchObject({ signal: 'SIGTERM', command: 'python3' });
    expect(result.output).toContain('armed');
    expect(result.terminal.status).toBe('running');
    const [listed] = await client.call(TerminalList, { sessionId });
    expect(listed!.status).toBe('running');
  });

  test('$/cancelRequest of a run interrupts the command and answers with what was read', async () => {
    const { client, sessionId, terminalId, run } = await shellFixture();
    const controller = new AbortController();
    const pending = client.call(
      TerminalRun,
      { sessionId, terminalId, command: 'echo started; sleep 30; echo never', idleMs: 20_000 },
      { signal: controller.signal },
    );
    await waitFor(
      async () => (await client.call(TerminalRead, { sessionId, terminalId })).text.includes('started'),
      'the command to print',
    );
    controller.abort();
    const result = await pending;
    expect(result).toMatchObject({ state: 'completed', exitCode: 130 });
    expect(result.output).toContain('started');
    expect(result.output).not.toContain('never');
    expect((await run('echo next')).output).toBe('next\n');
  });
});
