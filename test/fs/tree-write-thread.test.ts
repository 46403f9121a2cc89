/**
 * The writing thread of tree transfers, on its own: a batch still out when the thread ends fails
 * (the upload it belongs to fails as any write failure does) and the next batch gets a new thread;
 * while a batch is out the thread keeps its process alive, and idle it does not. The built module
 * is loaded (dist/), since the thread runs the built `tree-write-worker.js` beside it.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import type * as WriteThread from '../../shared/tree-write-thread.js';

const BUILT = join(import.meta.dirname, '..', '..', 'dist', 'shared', 'tree-write-thread.js');

/** `count` files named `f<i>` in `dir`, each holding its own name, as one batch. */
function batchOf(dir: string, count: number): { files: WriteThread.FileToWrite[]; bytes: ArrayBuffer } {
  const names = Array.from({ length: count }, (_, i) => `f${i}`);
  const bytes = Buffer.from(names.join(''));
  const files = names.map((name) => ({
    at: join(dir, name),
    size: name.length,
    mode: 0o640,
    masked: true,
    mtimeMs: 1e12,
  }));
  return { files, bytes: new Uint8Array(bytes).buffer };
}

describe('the tree writing thread', () => {
  it('a batch out when the thread ends fails; the next batch is written by a new thread', async () => {
    const { writeThread } = (await import(BUILT)) as typeof WriteThread;
    const dir = mkdtempSync(join(tmpdir(), 'execd-write-thread-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const big = batchOf(join(dir, 'a'), 1);
    // The batch goes out as the thread starts; ending it at once leaves the batch unanswered.
    const cut = writeThread.write(
      Array.from({ length: 5000 }, (_, i) => ({ ...big.files[0]!, at: join(dir, `cut-${i}`), size: 0 })),
      new ArrayBuffer(0),
    );
    await writeThread.end();
    await expect(cut).rejects.toThrow(/the file-writing thread ended/);
    const next = batchOf(dir, 3);
    await writeThread.write(next.files, next.bytes);
    expect(readFileSync(join(dir, 'f2'), 'utf8')).toBe('f2');
    expect(statSync(join(dir, 'f2')).mode & 0o777).toBe(0o640);
    expect(statSync(join(dir, 'f2')).mtimeMs).toBe(1e12);
    expect(readdirSync(dir).filter((name) => name.startsWith('cut-')).length).toBeLessThan(5000);
    await writeThread.end();
  });

  it('a file that exists already fails its batch with its errno code', async () => {
    const { writeThread } = (await import(BUILT)) as typeof WriteThread;
    const dir = mkdtempSync(join(tmpdir(), 'execd-write-thread-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const first = batchOf(dir, 2);
    await writeThread.write(first.files, first.bytes);
    const again = batchOf(dir, 2);
    await expect(writeThread.write(again.files, again.bytes)).rejects.toMatchObject({ code: 'EEXIST' });
    await writeThread.end();
  });

  it('keeps its process alive while a batch is out, and not once idle', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'execd-write-thread-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const script = `
      const { writeThread } = await import(${JSON.stringify(pathToFileURL(BUILT).href)});
      const write = (name) => writeThread.write([{ at: ${JSON.stringify(dir)} + '/' + name, size: 1, mode: 0o600, masked: false, mtimeMs: NaN }], new TextEncoder().encode('x').buffer);
      await write('first');
      // The thread is idle now, holding nothing; the second batch must hold the process again.
      await write('second');
      process.stdout.write('written ' + Date.now() + '\\n');
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (piece: Buffer) => (output += piece.toString()));
    const [code] = (await once(child, 'exit')) as [number | null];
    const exitedAt = Date.now();
    expect(code).toBe(0);
    // Without the thread holding the process while a batch is out, it would end unanswered.
    expect(output).toMatch(/^written \d+\n$/);
    expect(existsSync(join(dir, 'second'))).toBe(true);
    // Idle, the thread holds nothing: the process ends at once, not when the thread's idle end (2 s) comes.
    expect(exitedAt - Number(output.split(' ')[1])).toBeLessThan(1500);
  });
});
