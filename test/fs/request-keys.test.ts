/**
 * The file methods with a side effect take a `requestKey` (SPEC §14): a repeat in the session
 * answers the first answer and acts once; the same key with other params changes nothing.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FsMkdir, FsWrite } from '../../protocol/fs.js';
import { rejection } from '../helpers/rejection.js';
import { b64, fsFixture } from './helpers.js';

describe('file methods with a request key', () => {
  it('a repeated keyed append lands once; a repeated keyed mkdir answers its first answer', async () => {
    const { client, workspace, sessionId } = await fsFixture();
    const append = { sessionId, path: 'log.txt', data: b64('once\n'), append: true, requestKey: 'append-1' };
    const first = await client.call(FsWrite, append);
    const again = await client.call(FsWrite, append);
    expect(again).toEqual(first);
    expect(readFileSync(join(workspace, 'log.txt'), 'utf8')).toBe('once\n');

    const other = await rejection(client.call(FsWrite, { ...append, data: b64('other\n') }));
    expect(other.message).toContain('requestKey reused with other params');
    expect(readFileSync(join(workspace, 'log.txt'), 'utf8')).toBe('once\n');

    // Unkeyed, a second mkdir of the same path is FS_EXISTS; keyed, the repeat is the first answer.
    const mkdir = { sessionId, path: 'made', requestKey: 'mkdir-1' };
    expect(await client.call(FsMkdir, mkdir)).toEqual({});
    expect(await client.call(FsMkdir, mkdir)).toEqual({});
    expect((await rejection(client.call(FsMkdir, { sessionId, path: 'made' }))).errorName).toBe('FS_EXISTS');
  });
});
