/**
 * Issue 6, test 7: a client that sends requests but never reads the answers does not slow down
 * another client: the daemon keeps its unsent output bounded (its streamed runs pause at the
 * high-water mark, far below `maxUnsentBytes`), drops that connection once it has read nothing
 * for `unreadTimeoutMs`, and the other client's runs keep their latency.
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import type { ExecdClient } from '../../client/connection.js';
import { DaemonStatus, SessionOpen, ShellRun } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { rawAuthed } from '../helpers/raw.js';
import { waitFor } from '../helpers/wait.js';

const MAX_UNSENT = 4 * 1024 * 1024;
const UNREAD_TIMEOUT_MS = 1_500;
const DROPPED = /more than (maxUnsentBytes|unreadTimeoutMs)/;
const FLOOD_RUNS = 12;

/** Resident memory of a process in MiB. */
function rssMiB(pid: number): number {
  const kib = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return Math.round(kib / 1024);
}

/** Latencies in ms of `count` sequential runs, each checked for its exact output. */
async function latencies(client: ExecdClient, count: number, tag: string): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const result = await client.run({ sessionId: 'fast', command: `echo ${tag}-${i}` });
    times.push(performance.now() - started);
    expect(result.stdout.text).toBe(`${tag}-${i}\n`);
  }
  return times;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

describe('slow client', () => {
  it('a client that never reads is dropped; another client keeps its latency', async () => {
    const daemon = await startDaemon({ config: { maxUnsentBytes: MAX_UNSENT, unreadTimeoutMs: UNREAD_TIMEOUT_MS } });
    const fast = await daemon.session('fast');
    const before = await latencies(fast, 20, 'before');
    const rssBefore = rssMiB(daemon.pid);

    const slow = await rawAuthed(daemon.socketPath, daemon.stateDir);
    await slow.request(SessionOpen.method, { sessionId: 'slow', cwd: daemon.dir });
    // From here on the slow client reads nothing: the kernel buffers fill, then the daemon's.
    slow.socket.pause();
    for (let i = 0; i < FLOOD_RUNS; i++) {
      slow.sendBody(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 100 + i,
          method: ShellRun.method,
          params: { sessionId: 'slow', command: 'yes | head -c 1M', outputToken: i },
        }),
      );
    }
    await waitFor(async () => (await fast.call(DaemonStatus, {})).processes > 0, 'the flood to start');
    const during = await latencies(fast, 20, 'during');
    const droppedWithinWindow = DROPPED.test(daemon.stderr());
    await waitFor(() => DROPPED.test(daemon.stderr()), 'the daemon to drop the slow connection');
    const reason = DROPPED.exec(daemon.stderr())![1];
    // Dropping the connection aborted the slow client's runs: nothing of theirs is left running.
    await waitFor(async () => (await fast.call(DaemonStatus, {})).processes === 0, 'the slow client runs to be gone');
    const rssAfter = rssMiB(daemon.pid);
    const after = await latencies(fast, 5, 'after');

    const [p50Before, p50During] = [median(before), median(during)];
    // Generous: a slow machine may be slow, but a blocked daemon would be seconds behind.
    expect(p50During).toBeLessThan(p50Before * 10 + 1_000);
    expect(after).toHaveLength(5);
    console.log(
      `slow client: dropped (${reason}; maxUnsentBytes=${MAX_UNSENT}, unreadTimeoutMs=${UNREAD_TIMEOUT_MS}) after ${FLOOD_RUNS} streamed runs of 1 MiB; other client p50 ` +
        `${p50Before.toFixed(1)} ms before, ${p50During.toFixed(1)} ms during (${(p50During / p50Before).toFixed(2)}x), 45/45 results correct; slow connection dropped ${droppedWithinWindow ? 'within' : 'after'} the measured window, its runs aborted; ` +
        `daemon RSS ${rssBefore} -> ${rssAfter} MiB`,
    );
  });
});
