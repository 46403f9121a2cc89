import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { FsChangeEvent } from '../../protocol/fs.js';
import { SessionOpen } from '../../protocol/methods.js';
import { waitFor } from '../helpers/wait.js';
import { b64, fsFixture } from './helpers.js';

describe('file writes and watches', () => {
  it('a md5sum reader loop sees only whole contents while the file is replaced 20 times', async () => {
    const { client, workspace, sessionId } = await fsFixture();
    const contents = Array.from({ length: 21 }, (_, i) =>
      Buffer.alloc(2 * 1024 * 1024 + i * 997, String.fromCharCode(65 + i)),
    );
    const sums = new Set(contents.map((content) => createHash('md5').update(content).digest('hex')));
    writeFileSync(join(workspace, 'target'), contents[0]!);
    // A separate process hashes the file in a tight loop until told to stop.
    const reader = spawn('bash', ['-c', 'while [ ! -e stop ]; do md5sum target; done'], { cwd: workspace });
    onTestFinished(() => {
      reader.kill('SIGKILL');
    });
    let seen = '';
    reader.stdout.setEncoding('utf8').on('data', (text: string) => (seen += text));
    const lines = () => seen.split('\n').length;
    for (let i = 1; i <= 20; i++) {
      // The next replace once the reader has hashed a few times more: reads overlap every replace.
      const before = lines();
      await client.fs.write({ sessionId, path: 'target', data: contents[i]!.toString('base64') });
      await waitFor(() => lines() >= before + 3, 'three more reads', { timeoutMs: 30_000 });
    }
    writeFileSync(join(workspace, 'stop'), '');
    await new Promise((resolve) => reader.once('exit', resolve));
    const observed = seen
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split(' ')[0]!);
    console.log(`md5sum loop: ${observed.length} reads, ${new Set(observed).size} distinct contents, 20 replaces`);
    expect(observed.length).toBeGreaterThan(0);
    for (const sum of observed) expect(sums.has(sum), `a mixed content was read: ${sum}`).toBe(true);
    expect(readFileSync(join(workspace, 'target')).equals(contents[20]!)).toBe(true);
  });

  it('100 concurrent small writes from 10 clients all land', async () => {
    const { daemon, workspace, sessionId } = await fsFixture();
    const clients = await Promise.all(
      Array.from({ length: 10 }, async () => {
        const client = await daemon.connect();
        await client.call(SessionOpen, { sessionId, cwd: workspace });
        return client;
      }),
    );
    const started = performance.now();
    await Promise.all(
      clients.flatMap((client, c) =>
        Array.from({ length: 10 }, (_, i) =>
          Promise.all([
            client.fs.write({ sessionId, path: `many/c${c}-${i}`, data: b64(`${c}:${i}`), createParents: true }),
            client.fs.write({ sessionId, path: 'log', data: b64(`${c}:${i}\n`), append: true }),
          ]),
        ),
      ),
    );
    console.log(`100 files + 100 appends from 10 clients: ${Math.round(performance.now() - started)} ms`);
    for (let c = 0; c < 10; c++)
      for (let i = 0; i < 10; i++) expect(readFileSync(join(workspace, `many/c${c}-${i}`), 'utf8')).toBe(`${c}:${i}`);
    const lines = readFileSync(join(workspace, 'log'), 'utf8').trim().split('\n').sort();
    expect(lines).toHaveLength(100);
    expect(new Set(lines).size).toBe(100);
  });

  it('a watch reports create, modify and remove within 1 s, and nothing after unwatch', async () => {
    const { client, workspace, sessionId } = await fsFixture();
    const events: Array<FsChangeEvent & { at: number }> = [];
    const watch = await client.fs.watch({ sessionId, path: '.', recursive: true }, (changed) => {
      for (const event of changed.events) events.push({ ...event, at: performance.now() });
    });
    const file = join(workspace, 'watched.txt');
    const within = async (kind: FsChangeEvent['kind'], act: () => void) => {
      const start = performance.now();
      act();
      const event = await waitFor(
        () => events.find((e) => e.kind === kind && e.path === file && e.at >= start),
        `${kind} event`,
        {
          timeoutMs: 5_000,
        },
      );
      const ms = event.at - start;
      console.log(`watch: ${kind} reported after ${ms.toFixed(0)} ms`);
      expect(ms).toBeLessThan(1_000);
    };
    await within('created', () => writeFileSync(file, 'one'));
    await new Promise((resolve) => setTimeout(resolve, 200));
    await within('modified', () => writeFileSync(file, 'two, longer'));
    await new Promise((resolve) => setTimeout(resolve, 200));
    await within('removed', () => unlinkSync(file));
    expect(await watch.unwatch()).toBe(true);
    const count = events.length;
    writeFileSync(join(workspace, 'after-unwatch'), 'x');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(events.length).toBe(count);
    expect(await client.fs.unwatch({ sessionId, watchId: watch.watchId })).toEqual({ unwatched: false });
  });
});
