/**
 * A size guard for incoming `Content-Length` frames. vscode-jsonrpc's reader buffers a message
 * until its body is complete and a header until its blank line, with no cap on either; the guard
 * reads the same framing alongside it and names the first frame that passes a cap, so that the
 * connection is closed before the oversized bytes are buffered.
 *
 * It finds the end of a header with the reader's own state machine and accepts exactly what the
 * reader accepts (`Key: value` lines, the last `Content-Length`
 * wins) and is stricter where the reader is lax (`Content-Length: 12abc` is refused, not read as
 * 12), so the two can never disagree about where a frame ends.
 */

/** Longest header block accepted, blank line included; LSP headers are a few dozen bytes. */
export const MAX_HEADER_BYTES = 8_192;

const HEADER_END = '\r\n\r\n';

/**
 * Why a connection must close: LIMIT_EXCEEDED for a message past `maxMessageBytes`, PARSE_ERROR
 * for framing the reader cannot or must not read.
 */
export interface FrameViolation {
  code: 'LIMIT_EXCEEDED' | 'PARSE_ERROR';
  message: string;
}

const malformed = (message: string): FrameViolation => ({ code: 'PARSE_ERROR', message });

/** A frame size cap and the name a refusal gives it (a plain number is `maxMessageBytes`). */
export interface MessageCap {
  bytes: number;
  /** E.g. `maxMessageBytes`, or `the limit before initialize`. */
  name: string;
}

/** Tracks the framing of one connection's incoming bytes. */
export class FrameGuard {
  /** Header text (latin1) of the frame being read, while in the header. */
  private header = '';
  /** Progress through the blank line that ends a header, as the reader counts it (4 = done). */
  private crlfState = 0;
  /** Body bytes still to come of the current frame; -1 while reading a header. */
  private bodyRemaining = -1;

  /**
   * The cap is read for every frame, so a `config/set` (or a connection authenticating) applies to
   * the next one.
   */
  constructor(
    private readonly maxMessageBytes: () => number | MessageCap,
    private readonly maxHeaderBytes = MAX_HEADER_BYTES,
  ) {}

  /** Takes the next chunk; returns why the connection must close, or undefined when it is fine. */
  feed(chunk: Buffer): FrameViolation | undefined {
    let at = 0;
    while (at < chunk.length) {
      if (this.bodyRemaining >= 0) {
        const take = Math.min(this.bodyRemaining, chunk.length - at);
        this.bodyRemaining -= take;
        at += take;
        if (this.bodyRemaining === 0) this.bodyRemaining = -1;
        continue;
      }
      const headerStart = at;
      while (at < chunk.length && this.crlfState !== 4) this.crlfState = nextCrlfState(this.crlfState, chunk[at++]!);
      this.header += chunk.toString('latin1', headerStart, at);
      if (this.header.length > this.maxHeaderBytes)
        return malformed(`frame header longer than ${this.maxHeaderBytes} bytes`);
      if (this.crlfState !== 4) continue;
      const block = this.header.slice(0, -HEADER_END.length);
      this.header = '';
      this.crlfState = 0;
      const length = contentLength(block);
      if (typeof length === 'string') return malformed(length);
      const cap = this.maxMessageBytes();
      const { bytes: max, name } = typeof cap === 'number' ? { bytes: cap, name: 'maxMessageBytes' } : cap;
      if (length > max)
        return {
          code: 'LIMIT_EXCEEDED',
          message: `message of ${length} bytes is larger than ${name} (${max})`,
        };
      // A zero-length body leaves the guard in the header state.
      if (length > 0) this.bodyRemaining = length;
    }
    return undefined;
  }
}

/**
 * One step of vscode-jsonrpc's header scan (`AbstractMessageBuffer.tryReadHeaders`): 1 after CR,
 * 2 after CRLF, 3 after CRLF CR, 4 after CRLF CRLF; anything else starts over. Copied rather than
 * approximated with `indexOf`, which disagrees on input such as CR CR LF CR LF.
 */
export function nextCrlfState(state: number, byte: number): number {
  if (byte === 13) return state === 0 ? 1 : state === 2 ? 3 : 0;
  if (byte === 10) return state === 1 ? 2 : state === 3 ? 4 : 0;
  return 0;
}

/** The frame's Content-Length, or why the header block is unacceptable. */
export function contentLength(block: string): number | string {
  let value: string | undefined;
  for (const line of block.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon === -1) return 'frame header line without a colon';
    if (line.slice(0, colon).toLowerCase() === 'content-length') value = line.slice(colon + 1).trim();
  }
  if (value === undefined) return 'frame without Content-Length';
  if (!/^\d{1,16}$/.test(value)) return `frame with an invalid Content-Length ${JSON.stringify(value.slice(0, 40))}`;
  return Number(value);
}
