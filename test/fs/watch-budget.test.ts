/**
 * Recursive `fs/watch` is counted in the directories it watches, against a per-session and a
 * daemon-wide budget checked before the watcher is set up: a session cannot take every inotify
 * watch with a few calls on a big tree, and another session's watch still reports changes.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { FsChangeEvent } from '../../protocol/fs.js';
import { SessionOpen } from '../../protocol/methods.js';
import { rejection } from '../helpers/rejection.js';
import { waitFor } from '../helpers/wait.js';
import { fsFixture } from './helpers.js';

/** 40 branches of 50 directories each under `root`: 2,041 directories with `root`. */
function branches(root: string): void {
  for (let b = 0; b < 40; b++)
    for (let d = 0; d < 50; d++) mkdirSync(join(root, `b${b}`, `d${d}`), { recursive: true });
}

describe('fs/watch directory budgets', () => {
  it('a watch past maxWatchedDirsPerSession or maxWatchedDirs is LIMIT_EXCEEDED before any watcher is set up', async () => {
    const { daemon, client, workspace, sessionId } = await fsFixture('read-only', {
      config: { maxWatchedDirsPerSession: 500, maxWatchedDirs: 800, maxWatchesPerSession: 32 },
    });
    const tree = join(workspace, 'tree');
    branches(tree);

    // The whole tree: refused at once, counting stopped past the budget.
    const started = performance.now();
    const whole = await rejection(client.fs.watch({ sessionId, path: 'tree', recursive: true }, () => {}));
    const refusedMs = performance.now() - started;
    expect(whole.errorName).toBe('LIMIT_EXCEEDED');
    expect(whole.message).toMatch(/maxWatchedDirsPerSession limit reached \(500 directories\)/);

    // Branches of 51 directories: 9 fit in 500, the 10th does not.
    for (let b = 0; b < 9; b++) await client.fs.watch({ sessionId, path: `tree/b${b}`, recursive: true }, () => {});
    const tenth = await rejection(client.fs.watch({ sessionId, path: 'tree/b9', recursive: true }, () => {}));
    expect(tenth.message).toMatch(/maxWatchedDirsPerSession/);
    // A watch that is not recursive costs one directory.
    await client.fs.watch({ sessionId, path: 'tree/b9' }, () => {});

    // Another session has its own budget, within the daemon's 800 (460 taken).
    const other = await daemon.connect();
    await other.call(SessionOpen, { sessionId: 'other', cwd: workspace, sandbox: { mode: 'read-only' } });
    for (let b = 10; b < 16; b++)
      await other.fs.watch({ sessionId: 'other', path: `tree/b${b}`, recursive: true }, () => {});
    const past = await rejection(other.fs.watch({ sessionId: 'other', path: 'tree/b16', recursive: true }, () => {}));
    expect(past.message).toMatch(/maxWatchedDirs limit reached \(800 directories\)/);

    // What the other session watches still reports its changes.
    const events: FsChangeEvent[] = [];
    await other.fs.watch({ sessionId: 'other', path: 'tree/b17/d0' }, (changed) => events.push(...changed.events));
    writeFileSync(join(tree, 'b17', 'd0', 'f'), 'x');
    await waitFor(() => events.find((event) => event.kind === 'created'), 'the created event');
    expect(events.some((event) => event.kind === 'overflow')).toBe(false);
    console.log(`[watch budget] a recursive watch of 2,041 directories refused in ${refusedMs.toFixed(0)} ms`);
  }, 60_000);
});
