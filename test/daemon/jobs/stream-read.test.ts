/** The pure arithmetic of job reads: UTF-8-safe slices, the `[stderr]` delta, the consuming cursor. */
import { describe, expect, it } from 'vitest';
import { consumeSlices, decodePage, decodeSlice, formatDelta } from '../../../daemon/jobs/stream-read.js';
import { TailBuffer } from '../../../spill/tail-buffer.js';

const bytes = (text: string) => Buffer.from(text, 'utf8');

describe('decodeSlice', () => {
  it('holds back an incomplete trailing character while the stream can grow', () => {
    const euro = bytes('€'); // e2 82 ac
    const slice = { bytes: Buffer.concat([bytes('ab'), euro.subarray(0, 2)]), offset: 10, lossy: false };
    expect(decodeSlice(slice, false)).toEqual({ text: 'ab', offset: 10, nextOffset: 12, lossy: false });
  });

  it('delivers everything once the stream is complete, invalid bytes as U+FFFD', () => {
    const slice = { bytes: Buffer.from([0x61, 0xe2, 0x82]), offset: 0, lossy: false };
    expect(decodeSlice(slice, true)).toEqual({ text: 'a\uFFFD', offset: 0, nextOffset: 3, lossy: false });
  });

  it('skips the tail of a character cut at the front of a lossy slice', () => {
    const slice = { bytes: Buffer.concat([bytes('€').subarray(1), bytes('x')]), offset: 5, lossy: true };
    expect(decodeSlice(slice, false)).toEqual({ text: 'x', offset: 7, nextOffset: 8, lossy: true });
  });

  it('never drops continuation-looking bytes at the front of a slice that lost nothing (binary output)', () => {
    const slice = { bytes: Buffer.from([0x80, 0x80, 0x41]), offset: 0, lossy: false };
    expect(decodeSlice(slice, false).nextOffset).toBe(3);
  });
});

describe('formatDelta', () => {
  it('is the stdout text alone when there is no new stderr', () => {
    expect(formatDelta('out', '')).toBe('out');
    expect(formatDelta('', '')).toBe('');
  });

  it('adds a newline before [stderr] only when stdout does not end with one', () => {
    expect(formatDelta('out', 'err')).toBe('out\n[stderr]\nerr');
    expect(formatDelta('out\n', 'err\n')).toBe('out\n[stderr]\nerr\n');
  });

  it('starts with [stderr] when there is no new stdout', () => {
    expect(formatDelta('', 'err\n')).toBe('[stderr]\nerr\n');
  });
});

describe('consumeSlices over a growing stream', () => {
  /** A deterministic pseudo-random sequence. */
  function random(seed: number): () => number {
    let state = seed;
    return () => {
      state = (state * 1103515245 + 12345) % 2 ** 31;
      return state / 2 ** 31;
    };
  }

  it('delivers every character exactly once, whatever the chunking, when the reader keeps up', () => {
    const next = random(7);
    const alphabet = ['a', 'é', '€', '𝄞', '\n'];
    const text = Array.from({ length: 5000 }, () => alphabet[Math.floor(next() * alphabet.length)]).join('');
    const all = bytes(text);
    const stdout = new TailBuffer(64);
    const stderr = new TailBuffer(64);
    let cursor = { stdout: 0, stderr: 0 };
    let delivered = '';
    let written = 0;
    while (written < all.length) {
      const size = 1 + Math.floor(next() * 20);
      stdout.append(all.subarray(written, written + size));
      written += size;
      const read = consumeSlices(
        stdout.sliceFrom(cursor.stdout),
        stderr.sliceFrom(cursor.stderr),
        written >= all.length,
      );
      expect(read.lossy).toBe(false);
      cursor = read.cursor;
      delivered += read.delta;
    }
    expect(delivered).toBe(text);
    expect(cursor.stdout).toBe(all.length);
  });

  it('marks a read lossy when the reader fell behind the window, and resumes exactly after it', () => {
    const stdout = new TailBuffer(8);
    const stderr = new TailBuffer(8);
    stdout.append(bytes('0123456789abcdef'));
    const lossy = consumeSlices(stdout.sliceFrom(0), stderr.sliceFrom(0), false);
    expect(lossy).toMatchObject({ delta: '89abcdef', lossy: true, cursor: { stdout: 16, stderr: 0 } });
    // Stream by stream: stdout's text starts at the window (8), past the reader's position.
    expect(lossy.stdout).toEqual({ text: '89abcdef', offset: 8, nextOffset: 16 });
    expect(lossy.stderr).toEqual({ text: '', offset: 0, nextOffset: 0 });
    stdout.append(bytes('gh'));
    stderr.append(bytes('E'));
    const next = consumeSlices(stdout.sliceFrom(lossy.cursor.stdout), stderr.sliceFrom(lossy.cursor.stderr), true);
    expect(next).toMatchObject({ delta: 'gh\n[stderr]\nE', lossy: false, cursor: { stdout: 18, stderr: 1 } });
    expect(next.stderr).toEqual({ text: 'E', offset: 0, nextOffset: 1 });
  });
});

describe('decodePage', () => {
  const text = bytes('a€b€');
  it('ends a page before a character it would cut, unless the file ended and nothing writes it', () => {
    expect(decodePage(text.subarray(0, 3), 0, false)).toEqual({ text: 'a', offset: 0, nextOffset: 1, lossy: false });
    expect(decodePage(text.subarray(0, 3), 0, true)).toMatchObject({ text: 'a\uFFFD', nextOffset: 3 });
  });

  it('starts a page read inside a character at the next character', () => {
    expect(decodePage(text.subarray(2, 6), 2, false)).toMatchObject({ text: 'b', offset: 4, nextOffset: 5 });
  });

  it('always moves forward with pages of 4 bytes, whatever the bytes', () => {
    const samples = [bytes('€€€€'), bytes('😀😀'), Buffer.from([0xf0, 0x9f, 0x98, 0x80, 0xff, 0x80, 0x80, 0x80])];
    for (const sample of samples) {
      let offset = 0;
      let decoded = '';
      while (offset < sample.length) {
        const page = decodePage(sample.subarray(offset, offset + 4), offset, offset + 4 >= sample.length);
        expect(page.nextOffset).toBeGreaterThan(offset);
        decoded += page.text;
        offset = page.nextOffset;
      }
      expect(decoded).toBe(sample.toString('utf8'));
    }
  });
});
