/**
 * The bounds of what paged `fs/list` listings keep between pages: snapshots per session, their
 * bytes, and their idle expiry. What is dropped only costs the next page a fresh read
 * (test/fs/list-pages.test.ts).
 */
import { describe, expect, it } from 'vitest';
import {
  LIST_SNAPSHOT_IDLE_MS,
  ListSnapshots,
  MAX_LIST_SNAPSHOT_BYTES_PER_SESSION,
  MAX_LIST_SNAPSHOTS_PER_SESSION,
  type DirNames,
} from '../../daemon/fs/list-snapshots.js';

/** `count` names of `length` characters. */
function names(count: number, length = 8): DirNames {
  return {
    names: Array.from({ length: count }, (_, i) => String(i).padStart(length, '0')),
    dirs: new Uint8Array(count),
    dev: 1n,
    ino: 2n,
  };
}

const id = { dev: 1n, ino: 2n };

describe('fs/list snapshots', () => {
  it('a later page finds what its first page kept, only for the same directory; a first page starts afresh', () => {
    const store = new ListSnapshots();
    const first = store.open('s', '/d', 1, true);
    first.keep('', names(10));
    const later = store.open('s', '/d', 1, false);
    expect(later).toBe(first);
    expect(later.get('', id)?.names).toHaveLength(10);
    // Another directory at the same path (replaced since): not used.
    expect(later.get('', { dev: 1n, ino: 3n })).toBeUndefined();
    // Another depth, another session: another listing.
    expect(store.open('s', '/d', 2, false).get('', id)).toBeUndefined();
    expect(store.open('t', '/d', 1, false).get('', id)).toBeUndefined();
    expect(store.open('s', '/d', 1, true).get('', id)).toBeUndefined();
    store.clear();
  });

  it(`at most ${MAX_LIST_SNAPSHOTS_PER_SESSION} listings per session, the least recently used dropped first`, () => {
    const store = new ListSnapshots();
    for (let i = 0; i < MAX_LIST_SNAPSHOTS_PER_SESSION; i++) store.open('s', `/d${i}`, 1, true).keep('', names(1));
    // /d0 used again: /d1 is now the least recently used.
    store.open('s', '/d0', 1, false);
    store.open('s', '/d-new', 1, true).keep('', names(1));
    expect(store.usage.listings).toBe(MAX_LIST_SNAPSHOTS_PER_SESSION);
    expect(store.open('s', '/d0', 1, false).get('', id)).toBeDefined();
    expect(store.open('s', '/d1', 1, false).get('', id)).toBeUndefined();
    store.clear();
  });

  it('names past the session’s bytes are not kept; others of the session are dropped to make room', () => {
    const store = new ListSnapshots();
    // Each name: 2 bytes a character plus 48: 64 characters make 176 bytes.
    const perName = 64 * 2 + 48;
    const tooMany = Math.ceil(MAX_LIST_SNAPSHOT_BYTES_PER_SESSION / perName) + 1;
    const huge = store.open('s', '/huge', 1, true);
    huge.keep('', names(tooMany, 64));
    expect(huge.get('', id)).toBeUndefined();
    const half = Math.floor(tooMany / 2);
    store.open('s', '/a', 1, true).keep('', names(half, 64));
    store.open('s', '/b', 1, true).keep('', names(half, 64));
    expect(store.open('s', '/a', 1, false).get('', id)).toBeUndefined();
    expect(store.open('s', '/b', 1, false).get('', id)).toBeDefined();
    expect(store.usage.bytes).toBeLessThanOrEqual(MAX_LIST_SNAPSHOT_BYTES_PER_SESSION);
    store.forgetSession('s');
    expect(store.usage).toEqual({ listings: 0, bytes: 0 });
  });

  it(`a listing unused for ${LIST_SNAPSHOT_IDLE_MS} ms is dropped`, () => {
    const store = new ListSnapshots();
    const now = Date.now();
    store.open('s', '/d', 1, true, now).keep('', names(3));
    expect(store.open('s', '/d', 1, false, now + LIST_SNAPSHOT_IDLE_MS - 1).get('', id)).toBeDefined();
    expect(store.open('s', '/d', 1, false, now + 2 * LIST_SNAPSHOT_IDLE_MS).get('', id)).toBeUndefined();
    store.clear();
  });
});
