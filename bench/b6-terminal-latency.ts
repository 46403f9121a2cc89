/**
 * B6: sequential `terminal/run` of `true` in one open terminal, against the same `bash -i` driven
 * in-process by pexpect (tuned; its default 50 ms send delay printed too), by tmux send-keys +
 * wait-for, and against B1's one-shot `shell/run`; measured with the terminal's scrollback full.
 */
import { TerminalClose, TerminalOpen, TerminalRun } from '../protocol/methods.js';
import type { BenchDaemon } from './daemon.js';
import { interleave } from './interleave.js';
import { median, percentile, type Figure } from './stats.js';
import { startPexpect, startTmux } from './terminal-baselines.js';

const RUNS = 500;
const WARMUP = 20;
/** Rounds of the two slow baselines (~50 ms each): enough for a stable median. */
const SLOW_ROUNDS = 60;
/** Output printed before the measured runs: more than the default 4 MiB scrollback. */
const FILL_BYTES = 5_000_000;

/** Measures B6. */
export async function benchTerminalLatency(daemon: BenchDaemon): Promise<Figure[]> {
  const sessionId = 'bench-b6';
  const client = await daemon.session(sessionId);
  const { terminal } = await client.call(TerminalOpen, { sessionId });
  const terminalId = terminal.id;
  const run = async () => {
    const result = await client.call(TerminalRun, { sessionId, terminalId, command: 'true' });
    if (result.state !== 'completed' || result.exitCode !== 0)
      throw new Error(`B6: terminal/run of true ended ${result.state} ${result.exitCode}`);
  };
  // A long-lived terminal's scrollback is full: measure with its ring at terminalScrollbackBytes,
  // so a cost that grows with the ring shows here.
  const fill = await client.call(TerminalRun, {
    sessionId,
    terminalId,
    command: `head -c ${FILL_BYTES} /dev/zero | tr '\\0' x; echo`,
  });
  if (fill.state !== 'completed') throw new Error(`B6: filling the scrollback ended ${fill.state}`);
  const pexpect = await startPexpect();
  const tmux = await startTmux();
  try {
    const fast = await interleave(
      [
        { name: 'terminal', once: run },
        { name: 'pexpect', once: () => pexpect.round('tuned') },
        {
          name: 'shell',
          once: async () => {
            const result = await client.run({ sessionId, command: 'true' });
            if (result.exitCode !== 0) throw new Error(`B6: shell/run of true exited ${result.exitCode}`);
          },
        },
      ],
      RUNS,
      WARMUP,
    );
    const slow = await interleave(
      [
        { name: 'terminal', once: run },
        { name: 'tmux', once: () => tmux.round() },
        { name: 'pexpect-default', once: () => pexpect.round('default') },
      ],
      SLOW_ROUNDS,
      2,
    );
    const t = median(fast.get('terminal')!);
    const p = median(fast.get('pexpect')!);
    const s = median(fast.get('shell')!);
    const t2 = median(slow.get('terminal')!);
    const x = median(slow.get('tmux')!);
    const d = median(slow.get('pexpect-default')!);
    const ms = (value: number) => `${value.toFixed(2)} ms`;
    return [
      {
        label: 'B6 p50 ratio vs tuned pexpect',
        value: t / p,
        target: 1.5,
        comparison: 'at-most',
        note: `terminal/run ${ms(t)} (p99 ${ms(percentile(fast.get('terminal')!, 99))}), pexpect ${ms(p)}; ${RUNS} runs, the scrollback full`,
      },
      {
        label: 'B6 p50 ratio vs one-shot shell/run',
        value: t / s,
        target: 0.2,
        comparison: 'at-most',
        note: `shell/run ${ms(s)}`,
      },
      {
        label: 'B6 p50 ratio vs tmux send-keys + wait-for',
        value: t2 / x,
        note: `terminal/run ${ms(t2)}, tmux ${ms(x)}, pexpect with its default delaybeforesend ${ms(d)}; ${SLOW_ROUNDS} rounds`,
      },
    ];
  } finally {
    pexpect.stop();
    tmux.stop();
    await client.call(TerminalClose, { sessionId, terminalId });
  }
}
