import { describe, expect, it } from 'vitest';
import { readPreamble } from '../../daemon/net/stream-preamble.js';

const token = 'A'.repeat(43);

describe('readPreamble', () => {
  it('decides JSON-RPC on the first byte that cannot start a stream', () => {
    expect(readPreamble(Buffer.from('C'))).toEqual({ kind: 'rpc' });
    expect(readPreamble(Buffer.from('Content-Length: 2\r\n\r\n{}'))).toEqual({ kind: 'rpc' });
    expect(readPreamble(Buffer.from('EXECD-STREAX'))).toEqual({ kind: 'rpc' });
  });

  it('waits for more while the bytes could still be a preamble', () => {
    expect(readPreamble(Buffer.from('EXEC'))).toEqual({ kind: 'more' });
    expect(readPreamble(Buffer.from(`EXECD-STREAM ${token} 12`))).toEqual({ kind: 'more' });
  });

  it('reads the token, the byte count and what followed the line', () => {
    const verdict = readPreamble(Buffer.from(`EXECD-STREAM ${token} 5\nhello`));
    expect(verdict).toMatchObject({ kind: 'stream', token, bytes: 5 });
    expect(verdict.kind === 'stream' && verdict.rest.toString()).toBe('hello');
  });

  it('refuses a malformed or overlong line', () => {
    expect(readPreamble(Buffer.from('EXECD-STREAM short 5\n'))).toMatchObject({ kind: 'bad' });
    expect(readPreamble(Buffer.from(`EXECD-STREAM ${token} -1\n`))).toMatchObject({ kind: 'bad' });
    expect(readPreamble(Buffer.from(`EXECD-STREAM ${token} 1234567890123456\n`))).toMatchObject({ kind: 'bad' });
    expect(readPreamble(Buffer.from(`EXECD-STREAM ${'A'.repeat(200)}`))).toMatchObject({
      kind: 'bad',
      reason: 'transfer stream preamble longer than 128 bytes',
    });
  });
});
