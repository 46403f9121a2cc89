/** A screen read of hostile output never freezes the daemon (issue 27.11): the emulator is fed in bounded pieces. */
import { describe, expect, test } from 'vitest';
import { ConfigGet, TerminalOpen, TerminalRead, TerminalRun } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';

/** Each sequence that touches the whole of a 1000×1000 screen, repeated to tens of KB. */
const HOSTILE = [
  ["'\\e[1000L'", 2_800], // insert 1000 lines: ~14 KB
  ["'\\e#8'", 2_000], // fill the screen with E: ~6 KB
  ["'\\e[2J'", 2_000], // erase the screen: ~8 KB
  ["'\\e[?1049h\\e[?1049l'", 2_000], // alternate screen on and off: ~32 KB
] as const;

describe('screen view under hostile output', () => {
  test("another client's request stays under 200 ms while a hostile 1000×1000 screen is read", async () => {
    const daemon = await startDaemon({ config: { graceMs: 500 } });
    const client = await daemon.session('s1');
    const other = await daemon.connect();
    const opened = await client.call(TerminalOpen, { sessionId: 's1', cols: 1000, rows: 1000 });
    const terminalId = opened.terminal.id;
    for (const [sequence, count] of HOSTILE) {
      const printed = await client.call(TerminalRun, {
        sessionId: 's1',
        terminalId,
        command: `for ((i = 0; i < ${count}; i++)); do printf ${sequence}; done; echo; echo visible-end`,
        timeoutMs: 60_000,
        idleMs: 30_000,
      });
      expect(printed).toMatchObject({ state: 'completed', exitCode: 0 });
    }
    const started = performance.now();
    let readMs = 0;
    const read = client.call(TerminalRead, { sessionId: 's1', terminalId, view: 'screen' }).then((result) => {
      readMs = performance.now() - started;
      return result;
    });
    const progress = { settled: false };
    read.finally(() => (progress.settled = true)).catch(() => undefined);
    const latencies: number[] = [];
    do {
      const before = performance.now();
      await other.call(ConfigGet, {});
      latencies.push(performance.now() - before);
      await new Promise((resolve) => setTimeout(resolve, 20));
    } while (!progress.settled || latencies.length < 5);
    const screen = await read;
    const max = Math.max(...latencies);
    console.log(
      `config/get during a hostile screen read: ${latencies.length} samples, max ${max.toFixed(1)} ms; the screen read took ${readMs.toFixed(0)} ms`,
    );
    expect(max).toBeLessThan(200);
    expect(typeof screen.text).toBe('string');
    // Later reads keep answering (the emulator works through or skips the backlog in the background).
    const again = await client.call(TerminalRead, { sessionId: 's1', terminalId, view: 'screen' });
    expect(typeof again.text).toBe('string');
  }, 180_000);
});
