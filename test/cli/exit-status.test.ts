/**
 * The CLI's exit status follows the job record (issue 26.7): a job that traps SIGTERM and exits
 * after `execd kill` is `killed` with the exit code it chose, and `execd read`/`wait` exit with
 * that code; one that dies of the signal exits 128+n.
 */
import { describe, expect, it } from 'vitest';
import type { JobSnapshot } from '../../protocol/types.js';
import { cliWorld } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';

describe('execd exit status of killed jobs', { timeout: 120_000 }, () => {
  it('a job that traps SIGTERM and exits 0 (or 3) after kill: read and wait exit with that code', async () => {
    const world = cliWorld();
    for (const code of [0, 3]) {
      const start = await world.run([
        'start',
        '--',
        `trap 'echo trapped; exit ${code}' TERM; echo up; sleep 60 & wait`,
      ]);
      const job = start.stdout.trim();
      await waitFor(async () => (await world.run(['peek', job])).stdout.includes('up'), 'the trap is set', {
        timeoutMs: 60_000,
      });
      expect((await world.run(['kill', job])).code).toBe(0);
      const record = JSON.parse((await world.run(['wait', '--json', job])).stdout) as JobSnapshot;
      expect(record).toMatchObject({ status: 'killed', exitCode: code, signal: null });
      expect((await world.run(['wait', job])).code).toBe(code);
      const read = await world.run(['read', job]);
      expect(read.code).toBe(code);
      expect(read.stderr).toContain(`[job ${job}: killed]`);
    }
  });

  it('a job that dies of SIGTERM exits 143', async () => {
    const world = cliWorld();
    const job = (await world.run(['start', '--', 'sleep 60'])).stdout.trim();
    expect((await world.run(['kill', job])).code).toBe(0);
    const wait = await world.run(['wait', job]);
    expect(wait.code).toBe(143);
  });
});
