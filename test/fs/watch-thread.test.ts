/**
 * The watch thread, on its own: a watch's events come from the thread, and should the thread end
 * unexpectedly every watch is set up again on a fresh one and told `overflow`, then reports
 * changes as before; nothing is left running once the watches end. The built module is loaded
 * (dist/), since the thread runs the built `watch-worker.js` beside it.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { WatchTable as WatchTableType } from '../../daemon/fs/watches.js';
import type { FsChangedParams } from '../../protocol/fs.js';
import { waitFor } from '../helpers/wait.js';

const BUILT = join(import.meta.dirname, '..', '..', 'dist', 'daemon', 'fs', 'watches.js');

describe('the watch thread', () => {
  it('a watch survives its thread ending: overflow, then changes again', async () => {
    const { WatchTable } = (await import(BUILT)) as { WatchTable: typeof WatchTableType };
    const dir = mkdtempSync(join(tmpdir(), 'execd-watch-thread-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    mkdirSync(join(dir, 'sub'));
    const table = new WatchTable();
    const received: FsChangedParams[] = [];
    const sink = { id: 1, notify: <P>(_type: unknown, params: P) => (received.push(params as FsChangedParams), true) };
    const watchId = await table.add(
      's',
      sink,
      { mode: 'read-only', hidden: [] },
      {
        real: dir,
        shown: '/shown',
        recursive: true,
        dirs: 2,
      },
    );
    expect(typeof watchId).toBe('string');
    const kinds = () =>
      received.flatMap((changed) => changed.events.map((event) => `${event.kind} ${event.path ?? ''}`));

    writeFileSync(join(dir, 'sub', 'one'), 'x');
    await waitFor(() => kinds().includes('created /shown/sub/one'), 'the first change');

    // The thread ends as if it had crashed.
    const thread = (table as unknown as { worker: Worker }).worker;
    await thread.terminate();
    await waitFor(() => kinds().includes('overflow '), 'the overflow that says changes may have been missed');
    // Set up again on a fresh thread: changes are reported as before.
    await waitFor(
      () =>
        (table as unknown as { worker?: Worker }).worker && (table as unknown as { worker: Worker }).worker !== thread,
      'a fresh thread',
    );
    await waitFor(
      () => {
        writeFileSync(join(dir, 'sub', 'two'), String(Date.now()));
        return kinds().some((kind) => kind.endsWith('/shown/sub/two'));
      },
      'a change after the restart',
      { intervalMs: 200 },
    );
    expect(table.size).toBe(1);
    expect(await table.remove(watchId as string, 's')).toBe(true);
    expect(table.size).toBe(0);
  });
});
