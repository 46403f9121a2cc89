/** File-backed capture against real files: the writer here plays the child holding the descriptor. */
import { existsSync, fstatSync, mkdtempSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openFileCapture, type FileCapture } from '../../spill/file-capture.js';
import { waitFor } from '../helpers/wait.js';

const dirs: string[] = [];
const captures: FileCapture[] = [];
afterEach(() => {
  for (const capture of captures.splice(0)) capture.release();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function capture(maxBytes: number, maxSpillBytes = 1 << 20): FileCapture {
  const dir = mkdtempSync(join(tmpdir(), 'execd-file-capture-'));
  dirs.push(dir);
  const made = openFileCapture({ maxBytes, maxSpillBytes, path: join(dir, 'spill', 's', 'run.stdout') });
  if (made instanceof Error) throw made;
  captures.push(made);
  return made;
}

function write(c: FileCapture, text: string | Buffer): void {
  writeSync(c.fd, typeof text === 'string' ? Buffer.from(text) : text);
}

describe('FileCapture', () => {
  it('reports small output whole and leaves no file', () => {
    const c = capture(10);
    write(c, 'hello');
    expect(c.finish()).toEqual({ text: 'hello', truncated: false });
    expect(existsSync(c.target.path)).toBe(false);
  });

  it('keeps the complete stream from byte 0 in an owner-only file once it passes maxBytes', () => {
    const c = capture(4);
    for (const part of ['ab', 'cd', 'ef', 'gh']) write(c, part);
    expect(c.totalBytes).toBe(8);
    const result = c.finish();
    expect(result).toMatchObject({ text: 'efgh', truncated: true });
    expect(readFileSync(result.spillPath!, 'utf8')).toBe('abcdefgh');
    expect(statSync(result.spillPath!).mode & 0o777).toBe(0o600);
    expect(statSync(dirname(result.spillPath!)).mode & 0o777).toBe(0o700);
  });

  it('deletes the file past maxSpillBytes and still reports the exact tail', () => {
    const c = capture(4, 10);
    write(c, '0123456789abcdef');
    const result = c.finish();
    expect(result).toEqual({ text: 'cdef', truncated: true });
    expect(existsSync(c.target.path)).toBe(false);
  });

  it('never starts the tail inside a multi-byte character, and decodes invalid bytes as U+FFFD', () => {
    const c = capture(5);
    // "€" is 3 bytes: a 5-byte window over "a€€" starts inside the first "€".
    write(c, 'a€€');
    expect(c.finish()).toMatchObject({ text: '€', truncated: true });
    const binary = capture(10);
    write(binary, Buffer.from([0xff, 0x61]));
    expect(binary.finish()).toEqual({ text: '\ufffda', truncated: false });
  });

  it('keeps a punched-out discarded file exact at its tail while the writer goes on', async () => {
    const c = capture(1000, 1 << 20);
    // 40 MiB in steps, so the cap watcher frees the front meanwhile, then a numbered end.
    const filler = Buffer.alloc(1 << 20, 'x');
    for (let i = 0; i < 40; i++) {
      write(c, filler);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await waitFor(() => fstatSync(c.fd).blocks * 512 < 20 * 1024 * 1024, 'the front of the discarded file to be freed');
    const end = Array.from({ length: 200 }, (_, i) => `line ${i}\n`).join('');
    write(c, end);
    const result = c.finish();
    expect(result.truncated).toBe(true);
    expect(result).not.toHaveProperty('spillPath');
    expect(result.text).toBe(end.slice(-1000));
  });

  it('holds the file at its answered size while a leftover writer lives', async () => {
    const c = capture(4);
    write(c, 'abcdefgh');
    let writerAlive = true;
    const result = c.finish(() => writerAlive);
    write(c, 'written after the answer');
    await waitFor(() => statSync(result.spillPath!).size === 8, 'the file to be cut back to its answered size');
    expect(readFileSync(result.spillPath!, 'utf8')).toBe('abcdefgh');
    writerAlive = false;
  });
});
