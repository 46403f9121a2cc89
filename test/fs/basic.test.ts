import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rejection } from '../helpers/rejection.js';
import { b64, fsFixture } from './helpers.js';

describe('file methods', () => {
  it('write, stat, read, list, mkdir, move, remove through a real daemon', async () => {
    const { client, workspace, sessionId } = await fsFixture();
    const written = await client.fs.write({
      sessionId,
      path: 'a/b/hello.txt',
      data: b64('hello'),
      createParents: true,
    });
    expect(written.size).toBe(5);
    expect(readFileSync(join(workspace, 'a/b/hello.txt'), 'utf8')).toBe('hello');
    const stat = await client.fs.stat({ sessionId, path: 'a/b/hello.txt' });
    expect(stat).toMatchObject({ type: 'file', size: 5, mode: 0o644, version: written.version });
    const read = await client.fs.read({ sessionId, path: join(workspace, 'a/b/hello.txt'), offset: 1, length: 3 });
    expect(Buffer.from(read.data, 'base64').toString()).toBe('ell');
    expect(read).toMatchObject({ bytes: 3, eof: false, size: 5, version: written.version });
    await client.fs.write({ sessionId, path: 'a/b/hello.txt', data: b64(' world'), append: true });
    expect(readFileSync(join(workspace, 'a/b/hello.txt'), 'utf8')).toBe('hello world');
    await client.fs.mkdir({ sessionId, path: 'a/c' });
    symlinkSync('/', join(workspace, 'a/root-link'));
    const listed = await client.fs.list({ sessionId, path: 'a', depth: 3 });
    expect(listed.entries.map((entry) => [entry.path.slice(workspace.length), entry.type])).toEqual([
      ['/a/b', 'directory'],
      ['/a/b/hello.txt', 'file'],
      ['/a/c', 'directory'],
      ['/a/root-link', 'symlink'],
    ]);
    const page = await client.fs.list({ sessionId, path: 'a', depth: 3, limit: 2 });
    expect(page.entries).toHaveLength(2);
    const rest = await client.fs.list({ sessionId, path: 'a', depth: 3, cursor: page.nextCursor });
    expect([...page.entries, ...rest.entries]).toEqual(listed.entries);
    expect(rest.nextCursor).toBeUndefined();
    await client.fs.move({ sessionId, from: 'a/b/hello.txt', to: 'a/c/moved.txt' });
    expect(readFileSync(join(workspace, 'a/c/moved.txt'), 'utf8')).toBe('hello world');
    writeFileSync(join(workspace, 'a/c/other'), 'x');
    expect((await rejection(client.fs.move({ sessionId, from: 'a/c/other', to: 'a/c/moved.txt' }))).errorName).toBe(
      'FS_EXISTS',
    );
    expect(await client.fs.remove({ sessionId, path: 'a/root-link' })).toEqual({ removed: true });
    expect((await rejection(client.fs.remove({ sessionId, path: 'a' }))).errorName).toBe('FS_EXISTS');
    expect(await client.fs.remove({ sessionId, path: 'a', recursive: true })).toEqual({ removed: true });
    expect(await client.fs.remove({ sessionId, path: 'a' })).toEqual({ removed: false });
    expect((await rejection(client.fs.stat({ sessionId, path: 'a' }))).errorName).toBe('FS_NOT_FOUND');
    expect((await rejection(client.fs.read({ sessionId, path: workspace }))).errorName).toBe('FS_IS_A_DIRECTORY');
  });

  it('a stale ifMatch is FS_CONFLICT carrying the current version and changes nothing', async () => {
    const { client, workspace, sessionId } = await fsFixture();
    const first = await client.fs.write({ sessionId, path: 'f', data: b64('one'), ifMatch: 'absent' });
    const second = await client.fs.write({ sessionId, path: 'f', data: b64('two'), ifMatch: first.version });
    expect(second.version).not.toBe(first.version);
    const stale = await rejection(
      client.fs.write({ sessionId, path: 'f', data: b64('three'), ifMatch: first.version }),
    );
    expect(stale.errorName).toBe('FS_CONFLICT');
    expect(stale.data?.version).toBe(second.version);
    const absent = await rejection(client.fs.write({ sessionId, path: 'f', data: b64('four'), ifMatch: 'absent' }));
    expect(absent.errorName).toBe('FS_CONFLICT');
    expect(readFileSync(join(workspace, 'f'), 'utf8')).toBe('two');
  });

  it('bad params are INVALID_PARAMS naming the field', async () => {
    const { client, sessionId } = await fsFixture();
    const cases: Array<[Promise<unknown>, RegExp]> = [
      [client.fs.read({ sessionId, path: 'a\0b' }), /path/],
      [client.fs.read({ sessionId, path: 'f', offset: -1 }), /offset/],
      [client.fs.read({ sessionId, path: 'f', length: 64 * 1024 * 1024 }), /length/],
      [client.fs.write({ sessionId, path: 'f', data: 'not base64!' }), /data/],
      [client.fs.list({ sessionId, path: '.', depth: 9 }), /depth/],
      [client.fs.list({ sessionId, path: '.', limit: 10_001 }), /limit/],
      [client.fs.write({ sessionId, path: 'f', data: '', mode: 0o17777 }), /mode/],
      [client.fs.stat({ sessionId, path: '' }), /path/],
    ];
    for (const [call, field] of cases) {
      const error = await rejection(call);
      expect(error.errorName).toBe('INVALID_PARAMS');
      expect(error.message).toMatch(field);
    }
  });
});
