/**
 * Issue 6, test 2: 200 runs of `yes` killed by a 100 ms timeout leave no zombie, no leftover
 * process, and no file descriptor behind in the daemon.
 */
import { describe, expect, it } from 'vitest';
import { startDaemon } from '../helpers/daemon.js';
import { commandChildrenOf, membersOfGroups, openFdCount } from '../helpers/procs.js';
import { waitFor } from '../helpers/wait.js';

const RUNS = 200;
const PARALLEL = 4;

describe('leaks', () => {
  // 200 floods of `yes` are CPU-bound work: on a shared 2-core machine they can take a while.
  it('200 timed-out runs of yes: no zombie, no leftover process, fds back to the start count', async () => {
    // A small spill cap keeps the disk traffic of 200 floods of `yes` small.
    const daemon = await startDaemon({ config: { maxSpillBytes: 1_000_000 } });
    const client = await daemon.session('s1');
    // One run first, so that lazily opened descriptors (spill dir, log) are part of the baseline.
    await client.run({ sessionId: 's1', command: 'yes', timeoutMs: 100 });
    await waitFor(() => commandChildrenOf(daemon.pid).length === 0, 'the warm-up run to be reaped');
    const fdsBefore = openFdCount(daemon.pid);

    const pids: number[] = [];
    let timedOut = 0;
    let remaining = RUNS;
    const worker = async () => {
      while (remaining-- > 0) {
        const result = await client.run({ sessionId: 's1', command: 'yes', timeoutMs: 100 });
        pids.push(result.pid);
        if (result.timedOut && result.signal === 'SIGTERM') timedOut += 1;
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, worker));
    expect(pids).toHaveLength(RUNS);
    expect(timedOut).toBe(RUNS);

    await waitFor(() => commandChildrenOf(daemon.pid).length === 0, 'no child of the daemon, zombie or not', {
      timeoutMs: 10_000,
    }).catch(() => undefined);
    const children = commandChildrenOf(daemon.pid);
    const leftovers = membersOfGroups(pids);
    expect(children).toEqual([]);
    expect(leftovers).toEqual([]);
    await waitFor(() => openFdCount(daemon.pid) <= fdsBefore, 'the daemon fds to return to the start count', {
      timeoutMs: 10_000,
    }).catch(() => undefined);
    const fdsAfter = openFdCount(daemon.pid);
    expect(fdsAfter).toBeLessThanOrEqual(fdsBefore);
    console.log(
      `leaks: ${RUNS} runs of yes (100 ms timeout, ${timedOut} timed out), ${children.length} zombies or children, ` +
        `${leftovers.length} leftover processes, daemon fds ${fdsBefore} before -> ${fdsAfter} after`,
    );
  }, 180_000);
});
