import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { connect } from '../../client/connect.js';
import { FsUploadBegin, FsUploadChunk, FsUploadCommit } from '../../protocol/fs.js';
import { SessionOpen } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';
import { startTlsDaemon } from '../remote/loopback-tls.js';
import { pem } from '../remote/pki.js';

const MiB = 1024 * 1024;

/** `VmRSS` of a process in bytes. */
function rssOf(pid: number): number {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(text)![1]) * 1024;
}

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Temp files the daemon leaves beside a target, if any. */
const tempsIn = (dir: string) => readdirSync(dir).filter((name) => name.startsWith('.execd-'));

describe('file transfers', () => {
  it('a 1 GiB file goes up and comes back byte-exact over TLS, daemon and client memory growth under 64 MB', async () => {
    const tls = await startTlsDaemon();
    const workspace = join(tls.daemon.dir, 'ws');
    mkdirSync(workspace);
    const source = join(workspace, 'source.bin');
    execFileSync('bash', ['-c', `head -c ${1024 * MiB} /dev/urandom > "$1"`, 'gen', source]);
    const expected = await sha256File(source);
    const client = await connect({ url: tls.url, ca: pem(tls.ca.cert), token: tls.token, clientName: 'test' });
    try {
      const sessionId = 'big';
      await client.call(SessionOpen, { sessionId, cwd: workspace });
      const daemonBefore = rssOf(tls.daemon.pid);
      const clientBefore = process.memoryUsage().rss;
      let daemonPeak = daemonBefore;
      let clientPeak = clientBefore;
      // Sampled every 8 MiB moved, whatever the size of the pieces progress reports.
      let sampledAt = 0;
      const sample = (done: number) => {
        if (Math.abs(done - sampledAt) < 8 * MiB) return;
        sampledAt = done;
        daemonPeak = Math.max(daemonPeak, rssOf(tls.daemon.pid));
        clientPeak = Math.max(clientPeak, process.memoryUsage().rss);
      };
      let started = performance.now();
      const uploaded = await client.fs.upload(source, 'uploaded.bin', { sessionId, onProgress: sample });
      const upMs = performance.now() - started;
      started = performance.now();
      const back = join(workspace, 'back.bin');
      const downloaded = await client.fs.download(back, 'uploaded.bin', { sessionId, onProgress: sample });
      const downMs = performance.now() - started;
      const rate = (ms: number) => ((1024 / ms) * 1000).toFixed(0);
      const mb = (bytes: number) => (bytes / 1e6).toFixed(1);
      console.log(
        `1 GiB over TLS: up ${rate(upMs)} MiB/s, down ${rate(downMs)} MiB/s; ` +
          `daemon RSS ${mb(daemonBefore)} -> peak ${mb(daemonPeak)} MB (growth ${mb(daemonPeak - daemonBefore)}), ` +
          `client RSS ${mb(clientBefore)} -> peak ${mb(clientPeak)} MB (growth ${mb(clientPeak - clientBefore)})`,
      );
      expect(uploaded).toMatchObject({ size: 1024 * MiB, sha256: expected });
      expect(downloaded).toEqual({ size: 1024 * MiB, sha256: expected });
      expect(await sha256File(back)).toBe(expected);
      expect(daemonPeak - daemonBefore).toBeLessThan(64e6);
      expect(clientPeak - clientBefore).toBeLessThan(64e6);
      expect(tempsIn(workspace)).toEqual([]);
    } finally {
      client.close();
    }
  }, 600_000);

  it('a cut upload leaves no target and no temp file; a crash mid-upload is swept at the next start', async () => {
    const daemon = await startDaemon();
    const workspace = join(daemon.dir, 'ws');
    mkdirSync(workspace);
    writeFileSync(join(workspace, 'target'), 'old');
    const open = async () => {
      const client = await daemon.connect();
      await client.call(SessionOpen, { sessionId: 'cut', cwd: workspace });
      return client;
    };
    const chunk = Buffer.alloc(MiB, 7).toString('base64');
    // Disconnect mid-upload.
    const first = await open();
    const { uploadId } = await first.call(FsUploadBegin, { sessionId: 'cut', path: 'target' });
    await first.call(FsUploadChunk, { sessionId: 'cut', uploadId, offset: 0, data: chunk });
    expect(tempsIn(workspace)).toHaveLength(1);
    first.close();
    // The temp file goes first, then its record (a crash between leaves a record the next start sweeps).
    await waitFor(
      () => tempsIn(workspace).length === 0 && readdirSync(join(daemon.stateDir, 'fs-uploads')).length === 0,
      'the temp file of the cut upload and its record to go',
    );
    expect(await readFile(join(workspace, 'target'), 'utf8')).toBe('old');
    // Crash mid-upload: the next daemon on that state dir removes the temp file.
    const second = await open();
    const begun = await second.call(FsUploadBegin, { sessionId: 'cut', path: 'fresh' });
    await second.call(FsUploadChunk, { sessionId: 'cut', uploadId: begun.uploadId, offset: 0, data: chunk });
    await daemon.crash();
    expect(tempsIn(workspace)).toHaveLength(1);
    await startDaemon({ stateDir: daemon.stateDir });
    expect(tempsIn(workspace)).toEqual([]);
    expect(existsSync(join(workspace, 'fresh'))).toBe(false);
    expect(await readFile(join(workspace, 'target'), 'utf8')).toBe('old');
  });

  it('a chunk out of order or a commit whose hash differs is refused and changes nothing', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('order');
    writeFileSync(join(daemon.dir, 'target'), 'old');
    const { uploadId } = await client.call(FsUploadBegin, { sessionId: 'order', path: 'target' });
    await expect(
      client.call(FsUploadChunk, { sessionId: 'order', uploadId, offset: 5, data: 'AAAA' }),
    ).rejects.toMatchObject({
      errorName: 'INVALID_PARAMS',
      message: expect.stringMatching(/offset: must be 0/) as unknown,
    });
    await client.call(FsUploadChunk, { sessionId: 'order', uploadId, offset: 0, data: 'AAAA' });
    await expect(
      client.call(FsUploadCommit, { sessionId: 'order', uploadId, sha256: '0'.repeat(64) }),
    ).rejects.toMatchObject({ errorName: 'INVALID_PARAMS', message: expect.stringMatching(/sha256/) as unknown });
    expect(await readFile(join(daemon.dir, 'target'), 'utf8')).toBe('old');
    expect(tempsIn(daemon.dir)).toEqual([]);
    const source = join(daemon.dir, 'source');
    writeFileSync(source, 'new content');
    await expect(
      client.fs.upload(source, 'target', { sessionId: 'order', stream: false, chunkBytes: 4 }),
    ).resolves.toMatchObject({
      size: 11,
    });
    expect(await readFile(join(daemon.dir, 'target'), 'utf8')).toBe('new content');
  });
});
