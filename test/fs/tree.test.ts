/**
 * Trees through the file API (SPEC §19): a directory as one tar archive over a transfer stream.
 * What a round trip keeps (bytes, symlinks, hard links, modes), and what a hostile or broken
 * archive cannot do: escape the target by name or through a symlink, link to a hidden file, plant
 * a device or a setuid file, exhaust the daemon with entries or a trickle, or leave anything
 * behind (a staging directory, a half tree) when it is refused or cut.
 */
import {
  chmodSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { connect as netConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { open } from 'node:fs/promises';
import { pack as tarPack, type Header } from 'tar-stream';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { ExecdClient } from '../../client/connection.js';
import {
  FsDownloadBegin,
  FsDownloadChunk,
  FsUploadBegin,
  FsUploadChunk,
  FsUploadCommit,
  transferStreamPreamble,
} from '../../protocol/fs.js';
import { SessionOpen } from '../../protocol/methods.js';
import { TarUnpackStream, TreeUnpacker } from '../../shared/tree-unpack.js';
import { startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { rejection } from '../helpers/rejection.js';
import { waitFor } from '../helpers/wait.js';
import { fsFixture } from './helpers.js';

/** Staging directories and temp files the daemon left in `dir`. */
const leftoversIn = (dir: string) => readdirSync(dir).filter((name) => name.startsWith('.execd-'));

/** Every entry below `dir` as `path type mode [content|link]`, sorted: what a round trip must keep. */
function describeTree(dir: string): string[] {
  const lines: string[] = [];
  const walk = (at: string) => {
    for (const name of readdirSync(at).sort()) {
      const path = join(at, name);
      const rel = relative(dir, path);
      const stats = lstatSync(path);
      const mode = (stats.mode & 0o7777).toString(8);
      if (stats.isSymbolicLink()) lines.push(`${rel} symlink -> ${readlinkSync(path)}`);
      else if (stats.isDirectory()) {
        lines.push(`${rel} dir ${mode}`);
        walk(path);
      } else lines.push(`${rel} file ${mode} links=${stats.nlink} ${readFileSync(path, 'base64')}`);
    }
  };
  walk(dir);
  return lines;
}

/** A tar archive of `entries` (built with the same library a client uses). */
async function archiveOf(
  entries: Array<{ header: Partial<Header> & { name: string }; body?: string }>,
): Promise<Buffer> {
  const pack = tarPack();
  const chunks: Buffer[] = [];
  const collected = (async () => {
    for await (const chunk of pack) chunks.push(chunk as Buffer);
  })();
  for (const { header, body } of entries)
    await new Promise<void>((resolve, reject) =>
      pack.entry(header, body ?? '', (error) => (error ? reject(error) : resolve())),
    );
  pack.finalize();
  await collected;
  return Buffer.concat(chunks);
}

/** A raw transfer stream; `answer` is everything the daemon wrote before it hung up. */
async function rawStream(daemon: TestDaemon, token: string): Promise<{ socket: Socket; answer: Promise<string> }> {
  const socket = netConnect(daemon.socketPath);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  socket.on('error', () => {});
  const answer = new Promise<string>((resolve) => {
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
    socket.once('close', () => resolve(text));
  });
  socket.write(transferStreamPreamble(token, 0));
  return { socket, answer };
}

/** Sends `archive` as a tar upload to `path` and commits it; resolves with the commit's error, if any. */
async function uploadArchive(
  daemon: TestDaemon,
  client: ExecdClient,
  sessionId: string,
  path: string,
  archive: Buffer,
): Promise<{ answer: string; error?: { errorName?: string; message: string } }> {
  const { uploadId, streamToken } = await client.call(FsUploadBegin, { sessionId, path, format: 'tar' });
  const raw = await rawStream(daemon, streamToken);
  raw.socket.end(archive);
  const answer = await raw.answer;
  try {
    await client.call(FsUploadCommit, { sessionId, uploadId, size: archive.length });
    return { answer };
  } catch (error) {
    return { answer, error: error as { errorName?: string; message: string } };
  }
}

/** 200 small files, `many/f0` … `many/f199`. */
function manySmallFiles() {
  return Array.from({ length: 200 }, (_, i) => ({ header: { name: `many/f${i}` }, body: `file ${i}` }));
}

/**
 * 200 small files, then entries that reuse names (a file twice, a hard link to it, a file then a
 * symlink, a file then a directory with an entry in it, one of the 200 again): enough files first
 * that some are still being written when the clashes arrive.
 */
function clashingEntries() {
  return [
    ...manySmallFiles(),
    { header: { name: 'f', mode: 0o644 }, body: 'one' },
    { header: { name: 'f', mode: 0o755 }, body: 'two' },
    { header: { name: 'g', type: 'link' as const, linkname: 'f' } },
    { header: { name: 's' }, body: 'a file first' },
    { header: { name: 's', type: 'symlink' as const, linkname: 'f' } },
    { header: { name: 't' }, body: 'a file first' },
    { header: { name: 't', type: 'directory' as const, mode: 0o750 } },
    { header: { name: 't/inside' }, body: 'in t' },
    { header: { name: 'many/f7' }, body: 'again' },
  ];
}

/**
 * Unpacks `archive` into the new directory `root` in this process; `slowCreateMs` 0 writes every
 * new small file (but the samples) in the background, Infinity none.
 */
async function unpackHere(root: string, archive: Buffer, slowCreateMs: number): Promise<string> {
  mkdirSync(root);
  const handle = await open(root, 'r');
  const unpacker = new TreeUnpacker(
    { handle, real: root },
    { maxEntries: 1e6, maxFileBytes: 1e9, maxTotalBytes: 1e9 },
    undefined,
    slowCreateMs,
  );
  const stream = new TarUnpackStream(unpacker);
  try {
    for (let at = 0; at < archive.length; at += 4096) await stream.write(archive.subarray(at, at + 4096));
    await stream.end();
    await unpacker.finish();
  } finally {
    await unpacker.close();
    await handle.close();
  }
  return root;
}

describe('tree transfers', () => {
  it('a tree goes up and comes back with its bytes, symlinks, hard links and modes', async () => {
    const { daemon, workspace, client, sessionId } = await fsFixture();
    const local = join(daemon.dir, 'local');
    mkdirSync(join(local, 'bin'), { recursive: true });
    mkdirSync(join(local, 'empty'));
    mkdirSync(join(local, 'locked'));
    writeFileSync(join(local, 'bin', 'run.sh'), '#!/bin/sh\necho hi\n');
    chmodSync(join(local, 'bin', 'run.sh'), 0o755);
    writeFileSync(join(local, 'secret'), 'mine');
    chmodSync(join(local, 'secret'), 0o600);
    writeFileSync(join(local, 'big.bin'), Buffer.alloc(3 * 1024 * 1024 + 5, 7));
    writeFileSync(join(local, 'locked', 'inside'), 'read me');
    chmodSync(join(local, 'locked'), 0o555);
    linkSync(join(local, 'secret'), join(local, 'secret-too'));
    symlinkSync('bin/run.sh', join(local, 'run'));
    symlinkSync('/etc/passwd', join(local, 'passwd-link'));
    symlinkSync('../nowhere', join(local, 'dangling'));
    chmodSync(local, 0o750);

    const up = await client.fs.uploadTree(local, 'tree', { sessionId });
    expect(up.entries).toBe(12);
    const remote = join(workspace, 'tree');
    expect(describeTree(remote)).toEqual(describeTree(local));
    // The link came as a link: the host's /etc/passwd was not copied.
    expect(readlinkSync(join(remote, 'passwd-link'))).toBe('/etc/passwd');
    expect(statSync(join(remote, 'secret')).ino).toBe(statSync(join(remote, 'secret-too')).ino);
    expect(statSync(remote).mode & 0o777).toBe(0o750);
    expect(leftoversIn(workspace)).toEqual([]);

    const back = join(daemon.dir, 'back');
    const down = await client.fs.downloadTree('tree', back, { sessionId });
    expect(down.entries).toBe(12);
    expect(describeTree(back)).toEqual(describeTree(local));
    expect(statSync(join(back, 'secret')).ino).toBe(statSync(join(back, 'secret-too')).ino);
    expect(leftoversIn(daemon.dir)).toEqual([]);

    // An existing target is FS_EXISTS unless overwrite, which replaces it whole.
    await expect(client.fs.uploadTree(local, 'tree', { sessionId })).rejects.toMatchObject({ errorName: 'FS_EXISTS' });
    writeFileSync(join(remote, 'extra'), 'gone after overwrite');
    await client.fs.uploadTree(local, 'tree', { sessionId, overwrite: true });
    expect(describeTree(remote)).toEqual(describeTree(local));
    expect(leftoversIn(workspace)).toEqual([]);
  });

  it('names with .. or an absolute path, a file through a symlink entry, a hard link to a hidden file: refused, nothing written', async () => {
    const { daemon, workspace, client, sessionId } = await fsFixture();
    const outside = join(daemon.dir, 'outside');
    mkdirSync(outside);
    const token = join(daemon.stateDir, 'token');
    expect(existsSync(token)).toBe(true);
    const cases: Array<[string, Array<{ header: Partial<Header> & { name: string }; body?: string }>, RegExp]> = [
      [
        'dotdot',
        [
          { header: { name: 'ok.txt' }, body: 'fine' },
          { header: { name: '../escape.txt' }, body: 'x' },
        ],
        /'\.\.' component/,
      ],
      ['deep-dotdot', [{ header: { name: 'a/../../escape.txt' }, body: 'x' }], /'\.\.' component/],
      ['absolute', [{ header: { name: `${outside}/abs.txt` }, body: 'x' }], /absolute name/],
      [
        'through-symlink',
        [
          { header: { name: 'link', type: 'symlink', linkname: outside } },
          { header: { name: 'link/pwned.txt' }, body: 'x' },
        ],
        /not a directory of the archive \(a symlink is never followed\)/,
      ],
      [
        'hardlink-token-dotdot',
        [{ header: { name: 'stolen', type: 'link', linkname: relative(join(workspace, 'dest'), token) } }],
        /'\.\.' component/,
      ],
      ['hardlink-token-absolute', [{ header: { name: 'stolen', type: 'link', linkname: token } }], /absolute name/],
      [
        'hardlink-through-symlink',
        [
          { header: { name: 'st', type: 'symlink', linkname: daemon.stateDir } },
          { header: { name: 'stolen', type: 'link', linkname: 'st/token' } },
        ],
        /no regular file of this archive/,
      ],
      [
        'char-device',
        [{ header: { name: 'null', type: 'character-device', devmajor: 1, devminor: 3 } }],
        /character-device/,
      ],
      ['block-device', [{ header: { name: 'sda', type: 'block-device', devmajor: 8, devminor: 0 } }], /block-device/],
      ['fifo', [{ header: { name: 'pipe', type: 'fifo' } }], /fifo/],
      ['setuid', [{ header: { name: 'su', mode: 0o4755 }, body: '#!/bin/sh\n' }], /setuid or setgid/],
      ['setgid', [{ header: { name: 'sg', mode: 0o2755 }, body: '#!/bin/sh\n' }], /setuid or setgid/],
    ];
    for (const [label, entries, reason] of cases) {
      const { error, answer } = await uploadArchive(daemon, client, sessionId, 'dest', await archiveOf(entries));
      expect(error?.message, label).toMatch(reason);
      expect(error, label).toMatchObject({ errorName: 'FS_DENIED' });
      // The client ended its side with the archive; the daemon's answer still reaches it.
      expect(answer, label).toMatch(/^error /);
      expect(existsSync(join(workspace, 'dest')), label).toBe(false);
      expect(leftoversIn(workspace), label).toEqual([]);
    }
    expect(readdirSync(outside)).toEqual([]);
    expect(existsSync(join(daemon.dir, 'escape.txt'))).toBe(false);
    expect(readFileSync(token).length).toBeGreaterThan(0);
    expect(statSync(token).nlink).toBe(1);
  });

  it('entries that reuse a name land as the archive orders them, while earlier files are still being written', async () => {
    const { daemon, workspace, client, sessionId } = await fsFixture();
    const archive = await archiveOf(clashingEntries());
    const { error } = await uploadArchive(daemon, client, sessionId, 'clash', archive);
    expect(error).toBeUndefined();
    const at = (name: string) => join(workspace, 'clash', name);
    expect(readFileSync(at('f'), 'utf8')).toBe('two');
    expect(statSync(at('f')).mode & 0o777).toBe(0o755);
    expect(statSync(at('g')).ino).toBe(statSync(at('f')).ino);
    expect(readlinkSync(at('s'))).toBe('f');
    expect(statSync(at('t')).mode & 0o777).toBe(0o750);
    expect(readFileSync(at('t/inside'), 'utf8')).toBe('in t');
    expect(readFileSync(at('many/f7'), 'utf8')).toBe('again');
    expect(readFileSync(at('many/f199'), 'utf8')).toBe('file 199');
    expect(readdirSync(at('many'))).toHaveLength(200);

    // A file, then an entry through it as if it were a directory: refused, nothing left.
    const through = await archiveOf([
      ...manySmallFiles(),
      { header: { name: 'a' }, body: 'x' },
      { header: { name: 'a/b' }, body: 'y' },
    ]);
    const refused = await uploadArchive(daemon, client, sessionId, 'through', through);
    expect(refused.error).toMatchObject({ errorName: 'FS_DENIED' });
    expect(refused.error?.message).toMatch(/"a" is not a directory of the archive/);
    expect(existsSync(join(workspace, 'through'))).toBe(false);
    expect(leftoversIn(workspace)).toEqual([]);
  });

  it('files land with their exact modes whatever the umask, written here or in the background', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'execd-tree-modes-'));
    const umask = process.umask();
    onTestFinished(() => {
      process.umask(umask);
      rmSync(dir, { recursive: true, force: true });
    });
    const modes = [0o644, 0o755, 0o666, 0o777, 0o600, 0o444, 0o1755];
    const archive = await archiveOf([
      ...manySmallFiles(),
      ...modes.map((mode) => ({ header: { name: `m${mode.toString(8)}`, mode }, body: 'x' })),
    ]);
    for (const mask of [0o077, 0o022, 0o000])
      for (const slowCreateMs of [Number.POSITIVE_INFINITY, 0]) {
        process.umask(mask);
        const root = await unpackHere(join(dir, `${mask.toString(8)}-${slowCreateMs}`), archive, slowCreateMs);
        process.umask(umask);
        const landed = modes.map((mode) => statSync(join(root, `m${mode.toString(8)}`)).mode & 0o7777);
        expect({ mask, slowCreateMs, landed }).toEqual({ mask, slowCreateMs, landed: modes });
      }
  });

  it('with every new small file written on the thread pool, reused names still land in the archive order', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'execd-tree-order-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const unpack = (name: string, archive: Buffer) => unpackHere(join(dir, name), archive, 0);
    const root = await unpack('clash', await archiveOf(clashingEntries()));
    expect(readFileSync(join(root, 'f'), 'utf8')).toBe('two');
    expect(statSync(join(root, 'f')).mode & 0o777).toBe(0o755);
    expect(statSync(join(root, 'g')).ino).toBe(statSync(join(root, 'f')).ino);
    expect(readlinkSync(join(root, 's'))).toBe('f');
    expect(statSync(join(root, 't')).mode & 0o777).toBe(0o750);
    expect(readFileSync(join(root, 't/inside'), 'utf8')).toBe('in t');
    expect(readFileSync(join(root, 'many/f7'), 'utf8')).toBe('again');
    expect(readFileSync(join(root, 'many/f199'), 'utf8')).toBe('file 199');
    expect(readdirSync(join(root, 'many'))).toHaveLength(200);
    await expect(
      unpack(
        'through',
        await archiveOf([
          ...manySmallFiles(),
          { header: { name: 'a' }, body: 'x' },
          { header: { name: 'a/b' }, body: 'y' },
        ]),
      ),
    ).rejects.toThrow(/"a" is not a directory of the archive/);
  });

  it('no tree lands in or replaces a directory holding a hidden place; chunks are refused for a tar upload', async () => {
    const daemon = await startDaemon();
    const client = await daemon.connect();
    await client.call(SessionOpen, { sessionId: 'wide', cwd: daemon.dir });
    const archive = await archiveOf([{ header: { name: 'f' }, body: 'x' }]);
    await expect(
      client.call(FsUploadBegin, { sessionId: 'wide', path: join(daemon.stateDir, 'x'), format: 'tar' }),
    ).rejects.toMatchObject({ errorName: 'FS_DENIED' });
    await expect(
      client.call(FsUploadBegin, { sessionId: 'wide', path: daemon.dir, format: 'tar', overwrite: true }),
    ).rejects.toMatchObject({
      errorName: 'FS_DENIED',
      message: expect.stringMatching(/holds the daemon's state/) as unknown,
    });
    const { uploadId } = await client.call(FsUploadBegin, { sessionId: 'wide', path: 'tree', format: 'tar' });
    await expect(
      client.call(FsUploadChunk, { sessionId: 'wide', uploadId, offset: 0, data: archive.toString('base64') }),
    ).rejects.toMatchObject({
      errorName: 'INVALID_PARAMS',
      message: expect.stringMatching(/transfer stream/) as unknown,
    });
    const { downloadId } = await client.call(FsDownloadBegin, { sessionId: 'wide', path: '.', format: 'tar' });
    await expect(client.call(FsDownloadChunk, { sessionId: 'wide', downloadId, offset: 0 })).rejects.toMatchObject({
      errorName: 'INVALID_PARAMS',
    });
    // A download of a tree holding the state dir leaves the hidden places out.
    mkdirSync(join(daemon.dir, 'shown'));
    writeFileSync(join(daemon.dir, 'shown', 'file'), 'visible');
    const copies = mkdtempSync(join(tmpdir(), 'execd-tree-copy-'));
    onTestFinished(() => rmSync(copies, { recursive: true, force: true }));
    await client.fs.downloadTree('.', join(copies, 'copy'), { sessionId: 'wide' });
    const names = readdirSync(join(copies, 'copy'));
    expect(names).toContain('shown');
    expect(names).not.toContain('state');
    expect(names).not.toContain('run');
    expect(readFileSync(join(copies, 'copy', 'shown', 'file'), 'utf8')).toBe('visible');
  });

  it("a read-only session's tree upload is refused before a byte is sent", async () => {
    const { workspace, client, sessionId } = await fsFixture('read-only');
    await expect(client.call(FsUploadBegin, { sessionId, path: 'dest', format: 'tar' })).rejects.toMatchObject({
      errorName: 'FS_DENIED',
      message: expect.stringMatching(/read-only/) as unknown,
    });
    expect(readdirSync(workspace)).toEqual([]);
  });

  it('an archive past maxTreeFileBytes, maxTreeBytes or maxTreeEntries (a million empty entries offered) is refused at the limit', async () => {
    const { daemon, workspace, client, sessionId } = await fsFixture('danger-full-access', {
      config: { maxTreeEntries: 500, maxTreeFileBytes: 4096, maxTreeBytes: 10_000 },
    });
    // A file over maxTreeFileBytes, files together over maxTreeBytes: refused before their bytes land.
    const tooBig = await uploadArchive(
      daemon,
      client,
      sessionId,
      'big',
      await archiveOf([{ header: { name: 'f' }, body: 'x'.repeat(5000) }]),
    );
    expect(tooBig.error?.message).toMatch(/5000 bytes, over 4096 \(maxTreeFileBytes\)/);
    const tooMuch = await uploadArchive(
      daemon,
      client,
      sessionId,
      'much',
      await archiveOf([1, 2, 3].map((n) => ({ header: { name: `f${n}` }, body: 'x'.repeat(4000) }))),
    );
    expect(tooMuch.error?.message).toMatch(/exceed 10000 bytes \(maxTreeBytes\)/);
    expect(readdirSync(workspace)).toEqual([]);
    const { uploadId, streamToken } = await client.call(FsUploadBegin, { sessionId, path: 'many', format: 'tar' });
    const raw = await rawStream(daemon, streamToken);
    const pack = tarPack();
    const stream = { closed: false };
    raw.socket.once('close', () => (stream.closed = true));
    const pumping = (async () => {
      for await (const chunk of pack) {
        if (stream.closed) break;
        if (!raw.socket.write(chunk as Buffer))
          await new Promise<void>((resolve) => {
            raw.socket.once('drain', () => resolve());
            raw.socket.once('close', () => resolve());
          });
      }
    })();
    let offered = 0;
    for (; offered < 1_000_000 && !stream.closed; offered++)
      await new Promise<void>((resolve) => pack.entry({ name: `e${offered}` }, '', () => resolve()));
    pack.destroy();
    await pumping;
    expect(await raw.answer).toMatch(/more than 500 entries \(maxTreeEntries\)/);
    expect(offered).toBeLessThan(1_000_000);
    await expect(client.call(FsUploadCommit, { sessionId, uploadId })).rejects.toMatchObject({
      errorName: 'FS_DENIED',
    });
    expect(readdirSync(workspace)).toEqual([]);
  });

  it('a trickling stream is cut after fsTransferIdleMs; a stream cut half way leaves nothing once released', async () => {
    const { daemon, workspace, client, sessionId } = await fsFixture('danger-full-access', {
      config: { fsTransferIdleMs: 400 },
    });
    const archive = await archiveOf([
      { header: { name: 'a.txt' }, body: 'a'.repeat(5000) },
      { header: { name: 'd/b.txt' }, body: 'b'.repeat(5000) },
    ]);

    // One byte per second: the first second without a byte is longer than the idle bound.
    const slow = await client.call(FsUploadBegin, { sessionId, path: 'slow', format: 'tar' });
    const trickle = await rawStream(daemon, slow.streamToken);
    let sent = 0;
    const timer = setInterval(() => {
      if (!trickle.socket.destroyed) trickle.socket.write(archive.subarray(sent, ++sent));
    }, 1000);
    const answer = await trickle.answer;
    clearInterval(timer);
    expect(sent).toBeLessThan(4);
    expect(answer).toMatch(/fsTransferIdleMs/);
    // The stream's cut fails the transfer (FS_DENIED) and the idle sweep ends it (FS_NOT_FOUND):
    // both are armed by fsTransferIdleMs, and whichever comes first names the refusal.
    const commit = await rejection(client.call(FsUploadCommit, { sessionId, uploadId: slow.uploadId }));
    expect(['FS_DENIED', 'FS_NOT_FOUND']).toContain(commit.errorName);
    // Ended by the sweep, the transfer is gone at once and its staging directory right after.
    await waitFor(() => readdirSync(workspace).length === 0, 'the staging directory to go');

    // Cut half way, then committed: refused, and the staging directory goes.
    const cut = await client.call(FsUploadBegin, { sessionId, path: 'cut', format: 'tar' });
    const half = await rawStream(daemon, cut.streamToken);
    half.socket.write(archive.subarray(0, Math.floor(archive.length / 2)));
    await waitFor(() => {
      const staging = leftoversIn(workspace);
      return staging.length === 1 && existsSync(join(workspace, staging[0]!, 'a.txt'));
    }, 'the first entry to land in staging');
    half.socket.destroy();
    await half.answer;
    await expect(
      client.call(FsUploadCommit, { sessionId, uploadId: cut.uploadId, size: archive.length }),
    ).rejects.toMatchObject({
      errorName: 'FS_DENIED',
      message: expect.stringMatching(/did not arrive whole|no whole archive/) as unknown,
    });
    expect(readdirSync(workspace)).toEqual([]);

    // Cut half way and the client gone without a word: released with its connection.
    const other = await daemon.connect();
    await other.call(SessionOpen, { sessionId: 'gone', cwd: workspace });
    const left = await other.call(FsUploadBegin, { sessionId: 'gone', path: 'left', format: 'tar' });
    const dropped = await rawStream(daemon, left.streamToken);
    dropped.socket.write(archive.subarray(0, Math.floor(archive.length / 2)));
    await waitFor(() => leftoversIn(workspace).length === 1, 'staging to exist');
    dropped.socket.destroy();
    other.close();
    await waitFor(() => readdirSync(workspace).length === 0, 'the staging directory to be removed');
  });

  it('a daemon that crashed mid tree upload has its staging directory removed at the next start', async () => {
    const { daemon, workspace, client, sessionId } = await fsFixture();
    const archive = await archiveOf([
      { header: { name: 'a.txt' }, body: 'a'.repeat(5000) },
      { header: { name: 'd/b.txt' }, body: 'b'.repeat(5000) },
    ]);
    const { streamToken } = await client.call(FsUploadBegin, { sessionId, path: 'tree', format: 'tar' });
    const raw = await rawStream(daemon, streamToken);
    raw.socket.write(archive.subarray(0, Math.floor(archive.length / 2)));
    await waitFor(() => {
      const staging = leftoversIn(workspace);
      return staging.length === 1 && existsSync(join(workspace, staging[0]!, 'a.txt'));
    }, 'the first entry to land in staging');
    await daemon.crash();
    expect(leftoversIn(workspace)).toHaveLength(1);
    await startDaemon({ stateDir: daemon.stateDir });
    expect(readdirSync(workspace)).toEqual([]);
    expect(readdirSync(join(daemon.stateDir, 'fs-uploads'))).toEqual([]);
  });
});
