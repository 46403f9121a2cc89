/** B8: the daemon's resident memory per idle terminal, 64 of them open at once. */
import { setTimeout as sleep } from 'node:timers/promises';
import { SessionClose, SessionOpen, TerminalClose, TerminalOpen } from '../protocol/methods.js';
import type { BenchDaemon } from './daemon.js';
import { readMemory } from './proc-stats.js';
import type { Figure } from './stats.js';

const TERMINALS = 64;
/** `maxTerminalsPerSession` is 8 by default: the terminals are spread over sessions of 8. */
const PER_SESSION = 8;
/** Time for the terminals' first output (prompts) to be read and the daemon's heap to settle. */
const SETTLE_MS = 2_000;

/** Measures B8; the daemon's own RSS only (the terminals' bash processes are separate processes). */
export async function benchTerminalRss(daemon: BenchDaemon): Promise<Figure[]> {
  const client = await daemon.connect();
  const sessions = Array.from({ length: TERMINALS / PER_SESSION }, (_, i) => `bench-b8-${i}`);
  for (const sessionId of sessions) await client.call(SessionOpen, { sessionId, cwd: daemon.dir });
  // One terminal first, closed again: loading the PTY and screen libraries is not a per-terminal cost.
  const coldBefore = readMemory(daemon.pid).rss;
  const warm = await client.call(TerminalOpen, { sessionId: sessions[0]! });
  await client.call(TerminalClose, { sessionId: sessions[0]!, terminalId: warm.terminal.id });
  await sleep(SETTLE_MS);
  const before = readMemory(daemon.pid).rss;
  try {
    for (let i = 0; i < TERMINALS; i++)
      await client.call(TerminalOpen, { sessionId: sessions[Math.floor(i / PER_SESSION)]! });
    await sleep(SETTLE_MS);
    const after = readMemory(daemon.pid).rss;
    const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MB`;
    return [
      {
        label: 'B8 daemon RSS per idle terminal',
        value: (after - before) / TERMINALS / 2 ** 20,
        target: 2,
        comparison: 'at-most',
        unit: ' MB',
        note: `${TERMINALS} terminals: ${mb(before)} → ${mb(after)}; the first terminal's libraries ${mb(before - coldBefore)}`,
      },
    ];
  } finally {
    for (const sessionId of sessions) await client.call(SessionClose, { sessionId });
  }
}
