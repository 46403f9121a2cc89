/** The in-memory window's offset arithmetic (pure). */
import { describe, expect, it } from 'vitest';
import { TailBuffer } from '../../spill/tail-buffer.js';

describe('TailBuffer', () => {
  it('keeps the last capacity bytes with whole-stream offsets', () => {
    const tail = new TailBuffer(5);
    tail.append(Buffer.from('abc'));
    tail.append(Buffer.from('defg'));
    expect(tail.contents().toString()).toBe('cdefg');
    expect(tail.start).toBe(2);
    expect(tail.end).toBe(7);
  });

  it('drops whole chunks and cuts partial ones at the front', () => {
    const tail = new TailBuffer(4);
    for (const part of ['12', '34', '56', '7']) tail.append(Buffer.from(part));
    expect(tail.contents().toString()).toBe('4567');
    expect(tail.start).toBe(3);
  });

  it('slices from an offset, and says lossy when the offset fell out of the window', () => {
    const tail = new TailBuffer(4);
    tail.append(Buffer.from('abcdefgh'));
    expect(tail.sliceFrom(6)).toMatchObject({ offset: 6, lossy: false });
    expect(tail.sliceFrom(6).bytes.toString()).toBe('gh');
    const behind = tail.sliceFrom(1);
    expect(behind).toMatchObject({ offset: 4, lossy: true });
    expect(behind.bytes.toString()).toBe('efgh');
    expect(tail.sliceFrom(99).bytes.length).toBe(0);
  });

  it('slices correctly from every offset across many chunks, the partly dropped first one included', () => {
    const tail = new TailBuffer(20);
    let all = '';
    for (let i = 0; i < 12; i++) {
      const part = String.fromCharCode(97 + i).repeat(1 + (i % 3));
      tail.append(Buffer.from(part));
      all += part;
    }
    const held = all.slice(-20);
    expect(tail.start).toBe(all.length - 20);
    for (let from = 0; from <= all.length + 1; from++) {
      const slice = tail.sliceFrom(from);
      const offset = Math.min(Math.max(from, tail.start), tail.end);
      expect(slice).toMatchObject({ offset, lossy: from < tail.start });
      expect(slice.bytes.toString()).toBe(held.slice(offset - tail.start));
    }
    // Slicing never changed what is held.
    expect(tail.contents().toString()).toBe(held);
  });

  it('ignores empty chunks', () => {
    const tail = new TailBuffer(4);
    tail.append(Buffer.alloc(0));
    expect(tail.end).toBe(0);
    expect(tail.contents().length).toBe(0);
  });
});
