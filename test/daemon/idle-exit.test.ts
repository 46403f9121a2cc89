/** Idle exit: what counts as idle, and the clock that a busy moment resets. */
import { describe, expect, it } from 'vitest';
import type { DaemonContext } from '../../daemon/context.js';
import { daemonIsIdle, watchIdle } from '../../daemon/host/idle-exit.js';
import { waitFor } from '../helpers/wait.js';

function context(facts: { heldSessions?: number; runs?: number; processes?: number }): DaemonContext {
  const sessions = [
    { connections: new Set(Array.from({ length: facts.heldSessions ?? 0 }, (_, i) => i)) },
    { connections: new Set() },
  ];
  return {
    sessions: { all: () => sessions },
    runs: { size: facts.runs ?? 0 },
    processes: { count: facts.processes ?? 0 },
  } as unknown as DaemonContext;
}

describe('idle exit', () => {
  it('is idle only with no session held by a client, no run and no process', () => {
    expect(daemonIsIdle(context({}))).toBe(true);
    expect(daemonIsIdle(context({ heldSessions: 1 }))).toBe(false);
    expect(daemonIsIdle(context({ runs: 1 }))).toBe(false);
    expect(daemonIsIdle(context({ processes: 1 }))).toBe(false);
  });

  it('fires no sooner than idleMs after the last busy moment', async () => {
    let busy = true;
    const firedAt: number[] = [];
    const stop = watchIdle(
      () => !busy,
      200,
      () => firedAt.push(Date.now()),
    );
    try {
      const idleFrom = Date.now();
      busy = false;
      await waitFor(() => firedAt.length > 0, 'the idle exit');
      expect(firedAt[0]! - idleFrom).toBeGreaterThanOrEqual(200);
    } finally {
      stop();
    }
  });
});
