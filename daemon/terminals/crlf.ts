/**
 * CR LF → LF for stream results (docs/terminals.md): a PTY turns every `\n` a program prints into `\r\n`.
 * Pure; a streaming variant holds a trailing CR until the next chunk tells what follows it.
 */

/** Replaces every CR LF in a complete text with LF. */
export function crlfToLf(bytes: Buffer): Buffer {
  if (bytes.indexOf(0x0d) < 0) return bytes;
  return Buffer.from(bytes.toString('latin1').replace(/\r\n/g, '\n'), 'latin1');
}

/** Streaming CR LF → LF over chunks. */
export class CrlfStream {
  private heldCr = false;

  /** Converts one chunk; a CR at its end is held back. */
  push(chunk: Buffer): Buffer {
    let data = this.heldCr ? Buffer.concat([Buffer.from([0x0d]), chunk]) : chunk;
    this.heldCr = data.length > 0 && data[data.length - 1] === 0x0d;
    if (this.heldCr) data = data.subarray(0, data.length - 1);
    return crlfToLf(data);
  }

  /** The held CR, if any (the stream ended after it). */
  end(): Buffer {
    const rest = this.heldCr ? Buffer.from([0x0d]) : Buffer.alloc(0);
    this.heldCr = false;
    return rest;
  }
}
