/** UTF-8 boundaries (pure). */
import { describe, expect, it } from 'vitest';
import { completePrefixLength, decodeUtf8, leadingContinuationBytes } from '../../spill/utf8.js';

const euro = Buffer.from('€'); // e2 82 ac

describe('utf8 boundaries', () => {
  it('skips the continuation bytes of a character cut at the front', () => {
    expect(leadingContinuationBytes(Buffer.concat([euro.subarray(1), Buffer.from('x')]))).toBe(2);
    expect(leadingContinuationBytes(Buffer.from('plain'))).toBe(0);
    expect(leadingContinuationBytes(euro)).toBe(0);
  });

  it('finds the prefix that does not end inside a character', () => {
    const text = Buffer.concat([Buffer.from('ab'), euro]);
    expect(completePrefixLength(text)).toBe(5);
    expect(completePrefixLength(text.subarray(0, 4))).toBe(2);
    expect(completePrefixLength(text.subarray(0, 3))).toBe(2);
    expect(completePrefixLength(Buffer.from('😀').subarray(0, 3))).toBe(0);
    expect(completePrefixLength(Buffer.alloc(0))).toBe(0);
  });

  it('decodes invalid bytes as U+FFFD without throwing', () => {
    expect(decodeUtf8(Buffer.from([0x61, 0xff, 0x62]))).toBe('a\uFFFDb');
  });
});
