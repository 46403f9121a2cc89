/**
 * Transfer streams (SPEC §13): a transfer's bytes raw on a connection of their own, opened with
 * the stream token its begin answered. What a hostile or broken stream cannot do: use an unknown
 * or spent token, send more than it announced, or leave a half-written target when it is cut.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { connect as netConnect, type Socket } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  FsDownloadBegin,
  FsUploadBegin,
  FsUploadChunk,
  FsUploadCommit,
  transferStreamPreamble,
} from '../../protocol/fs.js';
import { ConfigGet } from '../../protocol/methods.js';
import { startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';

/** Temp files the daemon leaves beside a target, if any. */
const tempsIn = (dir: string) => readdirSync(dir).filter((name) => name.startsWith('.execd-'));

/** A raw socket to the daemon that collects what it is sent until the daemon hangs up. */
async function rawStream(daemon: TestDaemon): Promise<{ socket: Socket; received: Promise<Buffer> }> {
  const socket = netConnect(daemon.socketPath);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  socket.on('error', () => {});
  const received = new Promise<Buffer>((resolve) => {
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.once('close', () => resolve(Buffer.concat(chunks)));
  });
  return { socket, received };
}

async function workspaceSession(daemon: TestDaemon, sessionId: string) {
  const workspace = join(daemon.dir, `ws-${sessionId}`);
  mkdirSync(workspace);
  return { client: await daemon.session(sessionId, workspace), workspace };
}

describe('transfer streams', () => {
  it('an upload and a download move over their streams byte-exact; chunks after the stream attached are refused', async () => {
    const daemon = await startDaemon();
    const { client, workspace } = await workspaceSession(daemon, 'up');
    const bytes = randomBytes(3 * 1024 * 1024 + 17);
    writeFileSync(join(daemon.dir, 'local.bin'), bytes);
    const up = await client.fs.upload(join(daemon.dir, 'local.bin'), 'remote.bin', { sessionId: 'up' });
    expect(up.size).toBe(bytes.length);
    // Buffer.equals: a deep toEqual of megabytes takes vitest half a minute.
    expect((await readFile(join(workspace, 'remote.bin'))).equals(bytes)).toBe(true);
    const down = await client.fs.download(join(daemon.dir, 'back.bin'), 'remote.bin', { sessionId: 'up' });
    expect(down.sha256).toBe(up.sha256);
    expect((await readFile(join(daemon.dir, 'back.bin'))).equals(bytes)).toBe(true);

    const { uploadId, streamToken } = await client.call(FsUploadBegin, { sessionId: 'up', path: 'mixed' });
    const raw = await rawStream(daemon);
    raw.socket.write(transferStreamPreamble(streamToken, 4) + 'abcd');
    expect((await raw.received).toString()).toBe('ok 4\n');
    await expect(
      client.call(FsUploadChunk, { sessionId: 'up', uploadId, offset: 4, data: 'AAAA' }),
    ).rejects.toMatchObject({
      errorName: 'INVALID_PARAMS',
      message: expect.stringMatching(/transfer stream/) as unknown,
    });
    await client.call(FsUploadCommit, { sessionId: 'up', uploadId, size: 4 });
    expect(await readFile(join(workspace, 'mixed'), 'utf8')).toBe('abcd');
  });

  it('an unknown, spent or malformed token is refused with a reason and the daemon serves on', async () => {
    const daemon = await startDaemon();
    const { client } = await workspaceSession(daemon, 'tok');
    const answerTo = async (preamble: string) => {
      const raw = await rawStream(daemon);
      raw.socket.write(preamble);
      return (await raw.received).toString();
    };
    const unknown = randomBytes(32).toString('base64url');
    expect(await answerTo(transferStreamPreamble(unknown, 0))).toBe('error no open transfer has this stream token\n');
    expect(await answerTo('EXECD-STREAM ../../token 0\n')).toBe('error malformed transfer stream preamble\n');
    expect(await answerTo(`EXECD-STREAM ${'A'.repeat(200)}`)).toMatch(
      /^error transfer stream preamble longer than 128 bytes/,
    );
    writeFileSync(join(daemon.dir, 'ws-tok', 'file'), 'contents');
    const { streamToken } = await client.call(FsDownloadBegin, { sessionId: 'tok', path: 'file' });
    expect(await answerTo(transferStreamPreamble(streamToken, 0))).toBe('ok 8\ncontents');
    expect(await answerTo(transferStreamPreamble(streamToken, 0))).toBe(
      'error no open transfer has this stream token\n',
    );
    await expect(client.call(ConfigGet, {})).resolves.toBeDefined();
  });

  it('a stream that sends more than it announced fails its upload, and the target is untouched', async () => {
    const daemon = await startDaemon();
    const { client, workspace } = await workspaceSession(daemon, 'more');
    writeFileSync(join(workspace, 'target'), 'old');
    const { uploadId, streamToken } = await client.call(FsUploadBegin, { sessionId: 'more', path: 'target' });
    const raw = await rawStream(daemon);
    raw.socket.write(transferStreamPreamble(streamToken, 3) + 'abcdef');
    expect((await raw.received).toString()).toBe('error the stream sent more than the 3 bytes it announced\n');
    await expect(client.call(FsUploadCommit, { sessionId: 'more', uploadId })).rejects.toMatchObject({
      message: expect.stringMatching(/more than the 3 bytes/) as unknown,
    });
    expect(await readFile(join(workspace, 'target'), 'utf8')).toBe('old');
    expect(tempsIn(workspace)).toEqual([]);
  });

  it('a stream cut half way leaves no target and no temp file, and its upload cannot be committed', async () => {
    const daemon = await startDaemon();
    const { client, workspace } = await workspaceSession(daemon, 'cut');
    const { uploadId, streamToken } = await client.call(FsUploadBegin, { sessionId: 'cut', path: 'target' });
    const raw = await rawStream(daemon);
    raw.socket.write(transferStreamPreamble(streamToken, 8 * 1024 * 1024));
    raw.socket.write(randomBytes(4 * 1024 * 1024));
    // The temp file exists from begin on: wait for bytes in it, so the stream has attached.
    const streamed = () => tempsIn(workspace).some((name) => statSync(join(workspace, name)).size > 0);
    await waitFor(streamed, 'the stream to write into the temp file');
    raw.socket.destroy();
    await expect(client.call(FsUploadCommit, { sessionId: 'cut', uploadId })).rejects.toMatchObject({
      message: expect.stringMatching(/the stream ended after \d+ of 8388608 bytes/) as unknown,
    });
    expect(existsSync(join(workspace, 'target'))).toBe(false);
    expect(tempsIn(workspace)).toEqual([]);
  });

  it('an upload stream whose file shrinks while it is sent fails and commits nothing', async () => {
    const daemon = await startDaemon();
    const { client, workspace } = await workspaceSession(daemon, 'shrink');
    const local = join(daemon.dir, 'growing.bin');
    writeFileSync(local, randomBytes(64 * 1024 * 1024));
    let truncated = false;
    const upload = client.fs.upload(local, 'target', {
      sessionId: 'shrink',
      onProgress: (done) => {
        if (truncated || done < 1024 * 1024) return;
        truncated = true;
        writeFileSync(local, 'short');
      },
    });
    await expect(upload).rejects.toThrow(/shrank/);
    expect(existsSync(join(workspace, 'target'))).toBe(false);
    await waitFor(() => tempsIn(workspace).length === 0, 'the aborted upload to remove its temp file');
  });
});
