/**
 * Bounding terminal output for results (docs/terminals.md): CR LF → LF, the tail of at most
 * `maxOutputBytes` kept, cut on a UTF-8 character boundary. Pure.
 */
import { decodeUtf8, leadingContinuationBytes } from '../../spill/utf8.js';
import { crlfToLf } from './crlf.js';

/** A bounded text and whether it was cut. */
export interface BoundedText {
  text: string;
  truncated: boolean;
  /** Bytes of the whole (converted) output. */
  bytes: number;
}

/** The last `maxBytes` of `raw` as text (after CR LF → LF); `truncated` when something was cut. */
export function boundedTail(raw: Buffer, maxBytes: number): BoundedText {
  const converted = crlfToLf(raw);
  if (converted.length <= maxBytes) return { text: decodeUtf8(converted), truncated: false, bytes: converted.length };
  const tail = converted.subarray(converted.length - maxBytes);
  return { text: decodeUtf8(tail.subarray(leadingContinuationBytes(tail))), truncated: true, bytes: converted.length };
}
