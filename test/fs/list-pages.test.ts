/**
 * `fs/list` pages a big directory from a snapshot of its sorted names taken at the first page: a
 * later page costs in proportion to the page, not to the directory, so the 50 pages of a
 * 50,000-entry directory together cost a small multiple of the first, and the listing is whole
 * and in order. A cursor whose snapshot is gone (another listing's first page, an idle expiry) is
 * not an error: the page is read from the directory again, continuing after the cursor's path.
 */
import { closeSync, mkdirSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SessionOpen } from '../../protocol/methods.js';
import { fsFixture } from './helpers.js';

/** Median of `samples`. */
function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

describe('fs/list pages', { timeout: 300_000 }, () => {
  it('50,000 entries in 50 pages: each later page costs a fraction of the first, the listing is whole and sorted', async () => {
    const { client, workspace, sessionId } = await fsFixture('read-only');
    const big = join(workspace, 'big');
    mkdirSync(big);
    const names: string[] = [];
    for (let i = 0; i < 50_000; i++) {
      const name = `f${((i * 7919) % 50_000).toString().padStart(5, '0')}`;
      names.push(name);
      closeSync(openSync(join(big, name), 'w'));
    }
    names.sort();

    const paths: string[] = [];
    const times: number[] = [];
    let cursor: string | undefined;
    do {
      const started = performance.now();
      const page = await client.fs.list({ sessionId, path: 'big', limit: 1_000, ...(cursor && { cursor }) });
      times.push(performance.now() - started);
      paths.push(...page.entries.map((entry) => entry.path));
      cursor = page.nextCursor;
    } while (cursor);

    expect(paths).toEqual(names.map((name) => join(big, name)));
    const first = times[0]!;
    const later = times.slice(1);
    const total = times.reduce((sum, ms) => sum + ms, 0);
    console.log(
      `[fs/list] 50,000 entries, ${times.length} pages of 1,000: first ${first.toFixed(0)} ms, later pages median ` +
        `${median(later).toFixed(0)} ms (max ${Math.max(...later).toFixed(0)}), all ${total.toFixed(0)} ms (${(total / first).toFixed(1)}x the first)`,
    );
    expect(times).toHaveLength(50);
    expect(median(later)).toBeLessThan(first / 4);
    expect(total).toBeLessThan(first * 15);
  });

  it('a cursor whose snapshot is gone reads the directory again and continues after the cursor', async () => {
    const { daemon, client, workspace, sessionId } = await fsFixture('read-only');
    const dir = join(workspace, 'd');
    mkdirSync(join(dir, 'sub'), { recursive: true });
    for (const name of ['a', 'b', 'c', 'e']) writeFileSync(join(dir, name), '');
    writeFileSync(join(dir, 'sub', 'x'), '');
    const first = await client.fs.list({ sessionId, path: 'd', depth: 2, limit: 2 });
    expect(first.entries.map((entry) => entry.path.slice(dir.length))).toEqual(['/a', '/b']);
    // Made after the first page: the snapshot does not have it, so the listing's next page does not either.
    writeFileSync(join(dir, 'd'), '');
    const second = await client.fs.list({ sessionId, path: 'd', depth: 2, limit: 2, cursor: first.nextCursor });
    expect(second.entries.map((entry) => entry.path.slice(dir.length))).toEqual(['/c', '/e']);
    // A cursor the daemon holds no snapshot for (another session's, or one left idle past its
    // expiry): the directory is read again, from after the cursor's path.
    const other = await daemon.connect();
    await other.call(SessionOpen, { sessionId: 'other', cwd: workspace, sandbox: { mode: 'read-only' } });
    const fresh = await other.fs.list({ sessionId: 'other', path: 'd', depth: 2, limit: 10, cursor: 'c' });
    expect(fresh.entries.map((entry) => entry.path.slice(dir.length))).toEqual(['/d', '/e', '/sub', '/sub/x']);
    expect(fresh.nextCursor).toBeUndefined();
  });
});
