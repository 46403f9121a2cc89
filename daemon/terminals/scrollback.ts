/**
 * A terminal's scrollback ring (docs/terminals.md): the last `terminalScrollbackBytes` of its output
 * (private markers already stripped), addressed by byte offsets from the terminal's start. A
 * reader that fell behind the ring learns how many bytes it missed.
 */
import { TailBuffer } from '../../spill/tail-buffer.js';
import { completePrefixLength, decodeUtf8, leadingContinuationBytes } from '../../spill/utf8.js';
import { crlfToLf } from './crlf.js';

/** A stretch of the stream as text. */
export interface StreamSlice {
  text: string;
  offset: number;
  nextOffset: number;
  droppedBytes: number;
}

/** Decodes a byte range as UTF-8 text cut on character boundaries, CR LF turned into LF. */
export function streamText(bytes: Buffer): { text: string; skipped: number; used: number } {
  const skipped = leadingContinuationBytes(bytes);
  const used = completePrefixLength(bytes.subarray(skipped));
  let body = bytes.subarray(skipped, skipped + used);
  // A CR whose LF is not here yet stays for the next read.
  let held = 0;
  if (body.length > 0 && body[body.length - 1] === 0x0d && skipped + used === bytes.length) held = 1;
  body = body.subarray(0, body.length - held);
  return { text: decodeUtf8(crlfToLf(body)), skipped, used: used - held };
}

/** The output ring of one terminal. */
export class Scrollback {
  private readonly ring: TailBuffer;

  constructor(capacity: number) {
    this.ring = new TailBuffer(capacity);
  }

  /** Offset just past the last byte (bytes the terminal printed so far). */
  get end(): number {
    return this.ring.end;
  }

  /** Offset of the oldest byte still held. */
  get start(): number {
    return this.ring.start;
  }

  /** Appends output. */
  append(bytes: Buffer): void {
    this.ring.append(Buffer.from(bytes));
  }

  /** Raw bytes from `from` (clamped into the ring) to the end. */
  rawFrom(from: number): { bytes: Buffer; offset: number } {
    const { bytes, offset } = this.ring.sliceFrom(from);
    return { bytes, offset };
  }

  /** Text from `offset` (default: the oldest byte held), at most `maxBytes` bytes of it. */
  read(offset: number | undefined, maxBytes: number): StreamSlice {
    const asked = offset ?? this.ring.start;
    const { bytes, offset: start } = this.ring.sliceFrom(asked);
    const droppedBytes = Math.max(0, Math.min(this.ring.start, this.ring.end) - asked);
    const window = bytes.subarray(0, maxBytes);
    const { text, skipped, used } = streamText(window);
    return { text, offset: start + skipped, nextOffset: start + skipped + used, droppedBytes };
  }
}
