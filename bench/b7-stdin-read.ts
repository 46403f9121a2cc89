/**
 * B7: how soon `terminal/send` answers `stdin_read` once a program blocks reading the terminal
 * (`read x`, Python's `input()`), and that a pipe wait (`sleep 5 | cat`) is never taken for one.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { TerminalClose, TerminalList, TerminalOpen, TerminalSend, TerminalSignal } from '../protocol/methods.js';
import type { BenchDaemon } from './daemon.js';
import { median, percentile, type Figure } from './stats.js';

const TRIES = 20;

/** Programs that print the wall-clock time (seconds) right before they block reading the terminal. */
const READERS: ReadonlyArray<[string, string]> = [
  ['read x', 'echo "T=$EPOCHREALTIME"; read x'],
  ['python3 input()', `python3 -c 'import time; print("T=%.6f" % time.time(), flush=True); input()'`],
];

/** Measures B7. */
export async function benchStdinRead(daemon: BenchDaemon): Promise<Figure[]> {
  const sessionId = 'bench-b7';
  const client = await daemon.session(sessionId);
  const { terminal } = await client.call(TerminalOpen, { sessionId });
  const ids = { sessionId, terminalId: terminal.id };
  const send = (text: string, options: { submit?: boolean; idleMs?: number; timeoutMs?: number } = {}) =>
    client.call(TerminalSend, { ...ids, text, submit: options.submit ?? true, ...options });
  const delays: number[] = [];
  const perReader: string[] = [];
  let wrongReason = 0;
  let falseReads = 0;
  let retries = 0;
  /** After the SIGINT: once the shell holds the terminal again, Enter must bring a prompt (one retry). */
  const backAtPrompt = async (attempt: number) => {
    for (let polls = 0; polls < 100; polls++) {
      const [current] = await client.call(TerminalList, { sessionId });
      if (!current?.foreground) break;
      await sleep(50);
    }
    for (let tries = 0; tries < 2; tries++) {
      const back = await send('', { timeoutMs: 10_000 });
      if (back.waitReason === 'prompt') return;
      retries++;
    }
    throw new Error(`B7: try ${attempt}: sleep 5 | cat did not give the prompt back after SIGINT`);
  };
  try {
    for (const [label, command] of READERS) {
      const mine: number[] = [];
      for (let i = 0; i < TRIES; i++) {
        const result = await send(command, { idleMs: 5_000, timeoutMs: 10_000 });
        const answeredAt = Date.now();
        const blockedAt = Number(/T=(\d+\.\d+)/.exec(result.output)?.[1]) * 1000;
        if (result.waitReason !== 'stdin_read' || !Number.isFinite(blockedAt)) wrongReason++;
        else mine.push(answeredAt - blockedAt);
        const done = await send('answer', { timeoutMs: 10_000 });
        if (done.waitReason !== 'prompt')
          throw new Error(`B7: ${label} did not return to the prompt (${done.waitReason})`);
      }
      delays.push(...mine);
      perReader.push(`${label} ${median(mine).toFixed(1)} ms`);
    }
    for (let i = 0; i < TRIES; i++) {
      const result = await send('sleep 5 | cat', { idleMs: 1_000, timeoutMs: 10_000 });
      if (result.waitReason === 'stdin_read') falseReads++;
      await client.call(TerminalSignal, { ...ids, signal: 'SIGINT' });
      await backAtPrompt(i);
    }
  } finally {
    await client.call(TerminalClose, ids);
  }
  return [
    {
      label: 'B7 p50 delay blocking→stdin_read',
      value: median(delays),
      target: 150,
      comparison: 'at-most',
      unit: ' ms',
      digits: 1,
      note: `${perReader.join(', ')}; p99 ${percentile(delays, 99).toFixed(1)} ms; ${wrongReason} of ${TRIES * READERS.length} answered otherwise`,
    },
    {
      label: 'B7 false stdin_read for sleep 5 | cat',
      value: falseReads,
      target: 0,
      comparison: 'at-most',
      digits: 0,
      note: `${TRIES} tries, each answered after 1 s of silence; ${retries} Enter(s) after SIGINT needed a retry`,
    },
  ];
}
