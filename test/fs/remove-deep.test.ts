/**
 * `fs/remove { recursive }` of a tree deeper than the daemon may hold descriptors: the walk must
 * not hold one per level (EMFILE), must never follow a symlink out of the tree, and must still
 * refuse a tree that holds a hidden place. The daemon runs with 256 descriptors (prlimit, soft and
 * hard, so it cannot raise them) against a 2,000-level tree.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { rejection } from '../helpers/rejection.js';
import { fsFixture } from './helpers.js';

const DEPTH = 2000;

/** Makes `depth` nested directories `d` under `root` (deeper than PATH_MAX: built through descriptors). */
function deepTree(root: string, depth: number, outside: string): void {
  // every 100 levels a file, a symlink to a directory outside and one to a file outside
  const script = `
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
for i in range(1, ${depth} + 1):
    os.mkdir("d", dir_fd=fd); n = os.open("d", os.O_RDONLY, dir_fd=fd); os.close(fd); fd = n
    if i % 100 == 0:
        f = os.open("f", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd); os.write(f, b"x"); os.close(f)
        os.symlink(sys.argv[2], "out", dir_fd=fd); os.symlink(sys.argv[2] + "/victim", "victim", dir_fd=fd)
`;
  execFileSync('python3', ['-c', script, root, outside]);
}

describe('fs/remove of a deep tree', () => {
  it(`removes ${DEPTH} levels with 256 descriptors, never following a symlink out`, async () => {
    const { client, workspace, sessionId, daemon } = await fsFixture('workspace-write', {
      launcher: ['prlimit', '--nofile=256:256', '--'],
    });
    const outside = join(daemon.dir, 'outside');
    mkdirSync(join(outside, 'keep'), { recursive: true });
    writeFileSync(join(outside, 'victim'), 'untouched');
    deepTree(workspace, DEPTH, outside);
    // Left behind on failure, the tree is too deep for a recursive cleanup: rm walks it iteratively.
    onTestFinished(() => void execFileSync('rm', ['-rf', join(workspace, 'd')]));
    expect(await client.fs.remove({ sessionId, path: 'd', recursive: true })).toEqual({ removed: true });
    expect(existsSync(join(workspace, 'd'))).toBe(false);
    expect(readFileSync(join(outside, 'victim'), 'utf8')).toBe('untouched');
    expect(existsSync(join(outside, 'keep'))).toBe(true);
    // The daemon still has descriptors to serve the next call.
    expect(await client.fs.mkdir({ sessionId, path: 'after' })).toBeDefined();
  }, 120_000);

  it('still refuses a tree that holds the state dir, and removes nothing of it', async () => {
    const { client, sessionId, daemon } = await fsFixture('danger-full-access');
    const error = await rejection(client.fs.remove({ sessionId, path: daemon.dir, recursive: true }));
    expect(error.errorName).toBe('FS_DENIED');
    expect(existsSync(daemon.stateDir)).toBe(true);
  });
});
