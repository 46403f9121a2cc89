/** UTF-8 boundary arithmetic: cuts never start or end inside a character. */

/** True for a UTF-8 continuation byte (`10xxxxxx`). */
function isContinuation(byte: number): boolean {
  return (byte & 0xc0) === 0x80;
}

/**
 * Number of leading bytes to skip so that `buf` starts on a character boundary: the continuation
 * bytes of a character cut at its front (at most 3; more means invalid input, decoded as U+FFFD).
 */
export function leadingContinuationBytes(buf: Uint8Array): number {
  let n = 0;
  while (n < 3 && n < buf.length && isContinuation(buf[n]!)) n++;
  return n < buf.length || n === 0 ? n : 0;
}

/**
 * Length of the longest prefix of `buf` that does not end inside a multi-byte character, so a
 * reader can hold back an incomplete sequence until its remaining bytes arrive.
 */
export function completePrefixLength(buf: Uint8Array): number {
  const len = buf.length;
  // Look back at most 3 bytes for the lead byte of the last sequence.
  for (let back = 1; back <= Math.min(4, len); back++) {
    const byte = buf[len - back]!;
    if (isContinuation(byte)) continue;
    const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return need > back ? len - back : len;
  }
  return len;
}

const decoder = new TextDecoder('utf-8', { fatal: false });

/** Decodes bytes as UTF-8; invalid bytes become U+FFFD, never an exception. */
export function decodeUtf8(buf: Uint8Array): string {
  return decoder.decode(buf);
}
