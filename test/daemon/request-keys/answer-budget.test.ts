/**
 * Remembered request-key answers are bounded across sessions (`maxRequestKeyBytes`), not only per
 * session: many sessions of keyed 1 MB runs leave the daemon holding the newest answers that fit,
 * the oldest dropped first whatever their session. A repeat of a dropped key acts no more: it
 * answers LIMIT_EXCEEDED saying the request acted once; with other params it is still
 * INVALID_PARAMS. The per-session bound drops answers the same way.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExecdRpcError } from '../../../client/connection.js';
import { ShellRun } from '../../../protocol/methods.js';
import type { ResultOf } from '../../../protocol/methods.js';
import { startDaemon } from '../../helpers/daemon.js';

/** Lines of the file the test's commands append to: how many times a command really ran. */
function timesRan(path: string): number {
  return existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean).length : 0;
}

/** A run that records it ran and prints 1,000,000 bytes, its answer kept whole (about 1 MB of JSON). */
function bigRun(sessionId: string, count: string, requestKey: string) {
  return {
    sessionId,
    command: `echo ran >> ${count}; head -c 1000000 /dev/zero | tr '\\0' a`,
    stdoutMaxBytes: 1_048_576,
    requestKey,
  };
}

describe('request-key answer bytes', { timeout: 120_000 }, () => {
  it('across sessions the oldest answers are dropped past maxRequestKeyBytes; their repeat does not act again', async () => {
    const daemon = await startDaemon({ config: { maxRequestKeyBytes: 3_500_000 } });
    const count = join(daemon.dir, 'count');
    const clients = [];
    const firsts: ResultOf<typeof ShellRun>[] = [];
    for (let i = 0; i < 6; i++) {
      const client = await daemon.session(`s${i}`);
      clients.push(client);
      const first = await client.call(ShellRun, bigRun(`s${i}`, count, 'k'));
      expect(first.stdout.text).toHaveLength(1_000_000);
      firsts.push(first);
    }
    expect(timesRan(count)).toBe(6);

    // The three newest answers (about 3 MB) fit in 3.5 MB: repeated, they answer as the first did.
    for (let i = 5; i >= 3; i--)
      expect(await clients[i]!.call(ShellRun, bigRun(`s${i}`, count, 'k'))).toEqual(firsts[i]);
    // The three oldest were dropped, whatever their session: a repeat says so and acts no more.
    for (let i = 0; i < 3; i++) {
      const repeat = await clients[i]!.call(ShellRun, bigRun(`s${i}`, count, 'k')).catch((error: unknown) => error);
      expect(repeat).toBeInstanceOf(ExecdRpcError);
      expect((repeat as ExecdRpcError).errorName).toBe('LIMIT_EXCEEDED');
      expect((repeat as ExecdRpcError).message).toMatch(
        /^requestKey: this request acted once; its answer was dropped to keep remembered answers within maxRequestKeyBytes \(3500000 bytes\)/,
      );
    }
    expect(timesRan(count)).toBe(6);
    // The dropped key still knows its params: other params are refused, and nothing runs.
    const reused = await clients[0]!
      .call(ShellRun, { ...bigRun('s0', count, 'k'), command: 'echo other >> ' + count })
      .catch((error: unknown) => error);
    expect((reused as ExecdRpcError).errorName).toBe('INVALID_PARAMS');
    expect(timesRan(count)).toBe(6);
  });

  it('past maxRequestKeyBytesPerSession a session’s oldest answer is dropped the same way', async () => {
    const daemon = await startDaemon({ config: { maxRequestKeyBytesPerSession: 2_500_000 } });
    const count = join(daemon.dir, 'count');
    const client = await daemon.session('p');
    const firsts: ResultOf<typeof ShellRun>[] = [];
    for (const key of ['k1', 'k2', 'k3']) firsts.push(await client.call(ShellRun, bigRun('p', count, key)));
    const oldest = await client.call(ShellRun, bigRun('p', count, 'k1')).catch((error: unknown) => error);
    expect((oldest as ExecdRpcError).errorName).toBe('LIMIT_EXCEEDED');
    expect((oldest as ExecdRpcError).message).toMatch(/within maxRequestKeyBytesPerSession \(2500000 bytes\)/);
    expect(await client.call(ShellRun, bigRun('p', count, 'k3'))).toEqual(firsts[2]);
    expect(await client.call(ShellRun, bigRun('p', count, 'k2'))).toEqual(firsts[1]);
    expect(timesRan(count)).toBe(3);
  });
});
