/**
 * Uploads answer honestly (SPEC §13): a commit is checked against the session's policy as it is
 * at the commit (an upload begun before `session/update` narrowed the session to read-only commits
 * nothing), and a full file system is `FS_NO_SPACE` — not a policy refusal — in an error that
 * names the method that met it (`fs/upload/chunk`, not the begin).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { FsUploadBegin, FsUploadChunk, FsUploadCommit } from '../../protocol/fs.js';
import { SessionOpen, SessionUpdate } from '../../protocol/methods.js';
import { rejection } from '../helpers/rejection.js';
import { b64, fsFixture } from './helpers.js';

const IS_ROOT = process.getuid?.() === 0;

describe('upload commit and errors', { timeout: 60_000 }, () => {
  it('an upload begun before the session was narrowed to read-only does not commit', async () => {
    const { client, workspace, sessionId } = await fsFixture('workspace-write');
    const { uploadId } = await client.call(FsUploadBegin, { sessionId, path: 'late.txt' });
    await client.call(FsUploadChunk, { sessionId, uploadId, offset: 0, data: b64('payload') });
    await client.call(SessionUpdate, { sessionId, sandbox: { mode: 'read-only' } });
    const error = await rejection(client.call(FsUploadCommit, { sessionId, uploadId }));
    expect(error.errorName).toBe('FS_DENIED');
    expect(error.message).toMatch(/^fs\/upload\/commit .*read-only/);
    expect(existsSync(join(workspace, 'late.txt'))).toBe(false);
  });

  it.skipIf(!IS_ROOT)(
    'a full file system is FS_NO_SPACE, named by the chunk that met it (needs root for the tmpfs)',
    async () => {
      const { client, daemon } = await fsFixture('workspace-write');
      const small = join(daemon.dir, 'small');
      mkdirSync(small);
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', small]);
      onTestFinished(() => {
        execFileSync('umount', ['-l', small]);
      });
      await client.call(SessionOpen, {
        sessionId: 'full',
        cwd: small,
        sandbox: { mode: 'workspace-write', workspaceRoot: small },
      });
      const { uploadId } = await client.call(FsUploadBegin, { sessionId: 'full', path: 'big' });
      const chunk = Buffer.alloc(48 * 1024, 7).toString('base64');
      let error;
      for (let offset = 0; offset < 1024 * 1024 && !error; offset += 48 * 1024) {
        error = await client.call(FsUploadChunk, { sessionId: 'full', uploadId, offset, data: chunk }).then(
          () => undefined,
          (failure: unknown) => failure as Error & { errorName?: string },
        );
      }
      expect(error?.errorName).toBe('FS_NO_SPACE');
      expect(error?.message).toMatch(/^fs\/upload\/chunk .*no space left/);
      // The failed upload's temp file is gone again: a write larger than the whole file system fails alike.
      const bigger = Buffer.alloc(96 * 1024, 7).toString('base64');
      const write = await rejection(client.fs.write({ sessionId: 'full', path: 'other', data: bigger }));
      expect(write.errorName).toBe('FS_NO_SPACE');
    },
  );
});
