/** The incoming frame guard: caps on header and message size, agreement with the reader's framing. */
import { describe, expect, it } from 'vitest';
import { contentLength, FrameGuard, MAX_HEADER_BYTES } from '../../daemon/net/frame-guard.js';

const frame = (body: string) => Buffer.from(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);

describe('FrameGuard', () => {
  it('accepts frames up to the cap, whole or split at every byte', () => {
    const bytes = Buffer.concat([frame('{"a":1}'), frame('x'.repeat(100)), frame('{}')]);
    expect(new FrameGuard(() => 100).feed(bytes)).toBeUndefined();
    const split = new FrameGuard(() => 100);
    for (let i = 0; i < bytes.length; i++) expect(split.feed(bytes.subarray(i, i + 1))).toBeUndefined();
  });

  it('refuses a declared body larger than maxMessageBytes before it arrives', () => {
    const guard = new FrameGuard(() => 100);
    expect(guard.feed(frame('{}'))).toBeUndefined();
    expect(guard.feed(Buffer.from('Content-Length: 101\r\n\r\n'))).toEqual({
      code: 'LIMIT_EXCEEDED',
      message: 'message of 101 bytes is larger than maxMessageBytes (100)',
    });
  });

  it('reads maxMessageBytes for every frame', () => {
    let max = 1000;
    const guard = new FrameGuard(() => max);
    expect(guard.feed(frame('y'.repeat(500)))).toBeUndefined();
    max = 10;
    expect(guard.feed(frame('y'.repeat(500)))?.message).toMatch(/maxMessageBytes \(10\)/);
  });

  it('does not count body bytes that look like headers', () => {
    const guard = new FrameGuard(() => 100);
    expect(guard.feed(frame('Content-Length: 999999\r\n\r\n'))).toBeUndefined();
    expect(guard.feed(frame('{}'))).toBeUndefined();
  });

  it('refuses a header that never ends', () => {
    const guard = new FrameGuard(() => 100);
    expect(guard.feed(Buffer.alloc(MAX_HEADER_BYTES - 1, 'a'))).toBeUndefined();
    expect(guard.feed(Buffer.from('aa'))).toEqual({
      code: 'PARSE_ERROR',
      message: `frame header longer than ${MAX_HEADER_BYTES} bytes`,
    });
  });

  it('ends a header exactly where vscode-jsonrpc does (CR CR LF CR LF is not an end)', () => {
    const guard = new FrameGuard(() => 100);
    expect(guard.feed(Buffer.from('Content-Length: 2\r\r\n\r\n'))).toBeUndefined();
    // Still inside the header: the next blank line ends it, and the empty line inside the block is
    // refused as the reader refuses it.
    expect(guard.feed(Buffer.from('Content-Length: 500\r\n\r\n'))).toEqual({
      code: 'PARSE_ERROR',
      message: 'frame header line without a colon',
    });
  });

  it('parses Content-Length like the reader, but refuses what the reader would misread', () => {
    expect(contentLength('Content-Length: 12')).toBe(12);
    expect(contentLength('content-length:7\r\nContent-Type: application/json')).toBe(7);
    expect(contentLength('Content-Length: 1\r\nContent-Length: 2')).toBe(2);
    expect(contentLength('Content-Length: 12abc')).toMatch(/invalid Content-Length/);
    expect(contentLength('Content-Length: -1')).toMatch(/invalid Content-Length/);
    expect(contentLength('Content-Type: x')).toBe('frame without Content-Length');
    expect(contentLength('garbage')).toBe('frame header line without a colon');
  });
});
