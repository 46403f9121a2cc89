/** Terminal input goes to the PTY in chunks with back-pressure (issue 27.1): one terminal's input never stalls other clients. */
import { describe, expect, test } from 'vitest';
import { ShellRun, TerminalSend, TerminalSignal, TerminalWrite } from '../../protocol/methods.js';
import { rejection } from '../helpers/rejection.js';
import { shellFixture } from './terminal-helpers.js';

const MIB = 1024 * 1024;

describe('terminal input', () => {
  test("another client's shell/run true stays fast while a 1 MiB send is echoed by readline", async () => {
    const { daemon, client, sessionId, terminalId } = await shellFixture();
    const other = await daemon.session('s2');
    // The same request on this machine with no terminal input, for comparison (the machine is shared).
    const baseline: number[] = [];
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      await other.call(ShellRun, { sessionId: 's2', command: 'true' });
      baseline.push(performance.now() - started);
    }
    const baselineMedian = [...baseline].sort((a, b) => a - b)[2]!;
    const send = client.call(TerminalSend, {
      sessionId,
      terminalId,
      text: 'a'.repeat(MIB - 64),
      idleMs: 500,
      timeoutMs: 120_000,
    });
    const progress = { settled: false };
    send.finally(() => (progress.settled = true)).catch(() => undefined);
    const latencies: number[] = [];
    // Samples while the input is being written and echoed (it takes seconds).
    while (!progress.settled && latencies.length < 20) {
      const started = performance.now();
      const result = await other.run({ sessionId: 's2', command: 'true' });
      latencies.push(performance.now() - started);
      expect(result.exitCode).toBe(0);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const sent = await send;
    const sorted = [...latencies].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)]!;
    console.log(
      `shell/run true during a 1 MiB terminal send: ${latencies.length} samples, median ${median.toFixed(1)} ms, max ${sorted.at(-1)!.toFixed(1)} ms (without it: median ${baselineMedian.toFixed(1)} ms)`,
    );
    expect(latencies.length).toBeGreaterThanOrEqual(5);
    // What the terminal's input adds to another client's request stays under 100 ms (it was 7.6 s).
    expect(median - baselineMedian).toBeLessThan(100);
    // Every byte reached the program: readline echoed them all.
    expect(sent.terminal.outputBytes).toBeGreaterThan(MIB - 64);
    await client.call(TerminalSignal, { sessionId, terminalId, signal: 'SIGINT' });
  }, 180_000);

  test('input past maxTerminalInputBytes is refused, also while earlier input waits unread', async () => {
    const { client, sessionId, terminalId, run } = await shellFixture({ config: { maxTerminalInputBytes: 64 * 1024 } });
    const tooLarge = await rejection(
      client.call(TerminalSend, { sessionId, terminalId, text: 'x'.repeat(64 * 1024 + 1) }),
    );
    expect(tooLarge.errorName).toBe('LIMIT_EXCEEDED');
    expect(tooLarge.message).toMatch(/maxTerminalInputBytes \(65536\)/);
    // A program in raw mode that reads nothing (the PTY fills, input stays queued): a second write past the cap is refused.
    expect(await run('stty raw -echo; sleep 30', { idleMs: 300 })).toMatchObject({ state: 'idle' });
    // The kernel takes about 64 KiB; past that the daemon's queue holds the rest, up to the cap.
    let written = 0;
    let full: Awaited<ReturnType<typeof rejection>> | undefined;
    for (let i = 0; i < 10 && !full; i++) {
      const write = client.call(TerminalWrite, { sessionId, terminalId, data: 'y'.repeat(32 * 1024) });
      const answer = await write.then(
        (result) => result,
        () => undefined,
      );
      if (answer) written += answer.written;
      else full = await rejection(write);
    }
    console.log(`terminal/write accepted ${written} bytes before the queue was full`);
    expect(full).toBeDefined();
    expect(full!.errorName).toBe('LIMIT_EXCEEDED');
    expect(full!.message).toMatch(/has \d+ bytes of input its program has not read yet/);
    await client.call(TerminalSignal, { sessionId, terminalId, signal: 'SIGKILL' });
  }, 60_000);

  test('SIGINT discards the input typed for the program it ends, as a typed ^C does: the shell never runs it', async () => {
    const { client, sessionId, terminalId, run } = await shellFixture();
    expect(await run('sleep 30', { idleMs: 300 })).toMatchObject({ state: 'idle' });
    // A line typed for `sleep`, which never reads it: queued in the tty.
    await client.call(TerminalSend, { sessionId, terminalId, text: 'echo LEAKED-$((6*7))', idleMs: 200 });
    const after = await client.call(TerminalSignal, { sessionId, terminalId, signal: 'SIGINT' });
    expect(after.delivered).toBe(true);
    // Everything the terminal prints once `sleep` is gone: the prompt, and nothing the shell ran.
    const shown = await client.call(TerminalSend, { sessionId, terminalId, text: '', submit: false, idleMs: 500 });
    expect(shown.waitReason).toBe('prompt');
    const next = await run('echo next', { timeoutMs: 10_000 });
    expect(next.output).toContain('next');
    expect(`${shown.output}${next.output}`).not.toContain('LEAKED-42');
  }, 60_000);
});
