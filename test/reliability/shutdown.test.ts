/**
 * Issue 6, test 6: a graceful shutdown (SIGTERM, SIGINT, `daemon/shutdown`) during 10 runs and 10
 * background jobs answers every run as aborted, leaves no process of any tree (run or job) alive,
 * removes the socket, and exits 0.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { ExecdClient } from '../../client/connection.js';
import { DaemonShutdown, ShellStart } from '../../protocol/methods.js';
import type { ShellRunResult } from '../../protocol/types.js';
import { startDaemon, waitPidsGone } from '../helpers/daemon.js';
import { membersOfGroups, pidsIn } from '../helpers/procs.js';
import { waitFor } from '../helpers/wait.js';

const RUNS = 10;
const JOBS = 10;

describe('graceful shutdown', () => {
  it.each(['SIGTERM', 'SIGINT', 'daemon/shutdown'] as const)(
    '%s during 10 runs and 10 jobs: runs answered aborted, no process left, socket removed, exit 0',
    async (how) => {
      const daemon = await startDaemon();
      const clients: ExecdClient[] = [await daemon.session('s1'), await daemon.session('s2')];
      const outputs: string[] = Array.from({ length: RUNS }, () => '');
      const runs: Array<Promise<ShellRunResult | Error>> = outputs.map((_, i) => {
        const sessionId = i % 2 === 0 ? 's1' : 's2';
        return clients[i % 2]!.run(
          // Each tree has a shell, a background child and a foreground child.
          { sessionId, command: 'echo $$; sleep 300 & echo $!; sleep 300' },
          { onOutput: ({ text }) => (outputs[i] += text) },
        ).catch((error: Error) => error);
      });
      const jobs = await Promise.all(
        Array.from({ length: JOBS }, (_, i) =>
          clients[i % 2]!.call(ShellStart, { sessionId: i % 2 === 0 ? 's1' : 's2', command: 'sleep 300 & sleep 300' }),
        ),
      );
      await waitFor(() => outputs.every((text) => pidsIn(text).length === 2), 'every run to print its pids');
      const pids = outputs.flatMap(pidsIn);
      const jobGroups = jobs.map((job) => job.pid);
      expect(membersOfGroups(jobGroups).length).toBeGreaterThanOrEqual(JOBS);

      if (how === 'daemon/shutdown') await clients[0]!.call(DaemonShutdown, {});
      else daemon.proc.kill(how);
      // stop() sends SIGTERM again if the daemon is still shutting down: a repeated signal must not
      // cut the shutdown short.
      const exitCode = await daemon.stop();
      const results = await Promise.all(runs);

      const aborted = results.filter((result) => !(result instanceof Error) && result.aborted).length;
      const errors = results.filter((result) => result instanceof Error).map((error) => error.message);
      expect(errors).toEqual([]);
      expect(aborted).toBe(RUNS);
      const alive = await waitPidsGone(pids, 2_000);
      expect(alive).toEqual([]);
      // The foreground `sleep` of each tree printed no pid: check whole groups (led by each shell).
      const shells = outputs.map((text) => pidsIn(text)[0]!);
      expect(membersOfGroups(shells).filter((stat) => stat.state !== 'Z')).toEqual([]);
      const jobMembersLeft = membersOfGroups(jobGroups).filter((stat) => stat.state !== 'Z');
      expect(jobMembersLeft).toEqual([]);
      expect(existsSync(daemon.socketPath)).toBe(false);
      expect(exitCode).toBe(0);
      console.log(
        `shutdown (${how}): ${aborted}/${RUNS} runs answered aborted, ${pids.length - alive.length}/${pids.length} run processes gone, ` +
          `${JOBS}/${JOBS} job process groups gone, ` +
          `socket removed: ${!existsSync(daemon.socketPath)}, exit code ${exitCode}`,
      );
    },
  );
});
