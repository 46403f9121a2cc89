/**
 * Issue 13, point 7: the daemon's checks of leftover process groups (the `maxProcesses` count at
 * every run, the leftovers' capture-file watch) never rescan /proc per group: with 120
 * `sleep 600 &` leftovers a run and another client's `config/get` stay as fast as without.
 */
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import type { ExecdClient } from '../../client/connection.js';
import { ConfigGet, DaemonStatus, SessionClose } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { alivePids } from '../helpers/procs.js';
import { waitFor } from '../helpers/wait.js';

const LEFTOVERS = 120;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Latencies (ms) of `count` sequential runs of `true`. */
async function runLatencies(client: ExecdClient, sessionId: string, count: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const result = await client.run({ sessionId, command: 'true' });
    times.push(performance.now() - started);
    expect(result.exitCode).toBe(0);
  }
  return times;
}

/** `config/get` latencies of `observer` while `busy` runs; resolves once both are done. */
async function configLatenciesDuring(observer: ExecdClient, busy: Promise<unknown>): Promise<number[]> {
  const times: number[] = [];
  // A property, not a local: the loop must not take it for always false (the callback sets it).
  const state = { done: false };
  const finished = busy.finally(() => (state.done = true));
  while (!state.done) {
    const started = performance.now();
    await observer.call(ConfigGet, {});
    times.push(performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await finished;
  return times;
}

describe('leftover checks', () => {
  it(`keep runs and other clients fast with ${LEFTOVERS} leftover process groups`, async () => {
    // One session holds every leftover: its own limit is raised with the daemon-wide one.
    const daemon = await startDaemon({
      config: { maxProcesses: LEFTOVERS + 20, maxProcessesPerSession: LEFTOVERS + 20 },
    });
    const agent = await daemon.session('agent');
    const observer = await daemon.connect();

    await runLatencies(agent, 'agent', 5); // warm-up
    const runsBefore = runLatencies(agent, 'agent', 20);
    const configBefore = await configLatenciesDuring(observer, runsBefore);
    const before = await runsBefore;

    const pids: number[] = [];
    for (let i = 0; i < LEFTOVERS; i++) {
      const result = await agent.run({ sessionId: 'agent', command: 'sleep 600 >/dev/null 2>&1 & echo $!' });
      pids.push(Number(result.stdout.text.trim()));
    }
    expect((await observer.call(DaemonStatus, {})).processes).toBe(LEFTOVERS);

    const runsDuring = runLatencies(agent, 'agent', 20);
    const configDuring = await configLatenciesDuring(observer, runsDuring);
    const during = await runsDuring;
    // Every leftover is still counted, and still alive: the checks are cheap, not blind.
    expect((await observer.call(DaemonStatus, {})).processes).toBe(LEFTOVERS);
    expect(alivePids(pids)).toHaveLength(LEFTOVERS);

    // A leftover that dies on its own stops counting.
    process.kill(pids[0]!, 'SIGKILL');
    await waitFor(
      async () => (await observer.call(DaemonStatus, {})).processes === LEFTOVERS - 1,
      'the dead leftover to stop counting',
    );
    await agent.call(SessionClose, { sessionId: 'agent' });
    await waitFor(() => alivePids(pids).length === 0, 'the leftovers to be killed');

    console.log(
      `${LEFTOVERS} leftovers: run of true p50 ${median(before).toFixed(1)} ms without, ${median(during).toFixed(1)} ms with; ` +
        `another client's config/get p50 ${median(configBefore).toFixed(1)} ms without, ${median(configDuring).toFixed(1)} ms with ` +
        `(${configDuring.length} calls)`,
    );
  });
});
