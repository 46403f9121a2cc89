/**
 * Pure arithmetic of job reads (docs/jobs.md): turning a slice of a stream's bytes into text without
 * ever splitting a character, and assembling the `[stderr]` delta of a consuming read.
 */
import { completePrefixLength, decodeUtf8, leadingContinuationBytes } from '../../spill/utf8.js';

/** Bytes of one stream from a whole-stream offset to its end, as a window or a log file gives them. */
export interface StreamSlice {
  bytes: Uint8Array;
  /** Whole-stream offset of `bytes[0]`. */
  offset: number;
  /** True when bytes between the asked offset and `offset` are no longer available here. */
  lossy: boolean;
}

/** The smallest page worth reading: a page of 4 bytes always holds a whole character or an invalid byte. */
export const MIN_PAGE_BYTES = 4;

/** Decoded text of a slice and the offset a next read starts from. */
export interface StreamText {
  text: string;
  /** Whole-stream offset of the first byte of `text`. */
  offset: number;
  nextOffset: number;
  lossy: boolean;
}

/**
 * Decodes a slice. While the stream can still grow (`complete` false), an incomplete trailing
 * character is held back so the next read delivers it whole; once complete, everything goes out
 * (invalid bytes as U+FFFD). A lossy slice may start inside a character: those bytes are skipped.
 */
export function decodeSlice(slice: StreamSlice, complete: boolean): StreamText {
  const skip = slice.lossy ? leadingContinuationBytes(slice.bytes) : 0;
  const end = complete ? slice.bytes.length : Math.max(skip, completePrefixLength(slice.bytes));
  return {
    text: decodeUtf8(slice.bytes.subarray(skip, end)),
    offset: slice.offset + skip,
    nextOffset: slice.offset + end,
    lossy: slice.lossy,
  };
}

/**
 * Decodes a page of a file read at `offset`: it starts on a character boundary (continuation bytes
 * of a character cut at its front are skipped) and ends on one unless `complete` (the file's end,
 * and nothing writes it any more). A page of at least `MIN_PAGE_BYTES` always moves forward.
 */
export function decodePage(bytes: Uint8Array, offset: number, complete: boolean): StreamText {
  return decodeSlice({ bytes, offset, lossy: offset > 0 }, complete);
}

/**
 * The delta of a consuming read: the new stdout text, then — when there is new stderr — a newline
 * unless the stdout part is empty or already ends with one, `[stderr]\n` and the new stderr text.
 */
export function formatDelta(stdout: string, stderr: string): string {
  if (stderr.length === 0) return stdout;
  const separator = stdout.length === 0 || stdout.endsWith('\n') ? '' : '\n';
  return `${stdout}${separator}[stderr]\n${stderr}`;
}

/** A consuming reader's position in both streams (whole-stream byte offsets). */
export interface ReadCursor {
  stdout: number;
  stderr: number;
}

/** One stream's share of a consuming read. */
export interface ConsumedStream {
  text: string;
  offset: number;
  nextOffset: number;
}

/** The outcome of one consuming read: the delta, whether bytes were lost, and the advanced cursor. */
export interface ConsumedRead {
  delta: string;
  lossy: boolean;
  cursor: ReadCursor;
  stdout: ConsumedStream;
  stderr: ConsumedStream;
}

/** Consumes both streams' slices (taken at the cursor) and formats the delta. */
export function consumeSlices(stdout: StreamSlice, stderr: StreamSlice, complete: boolean): ConsumedRead {
  const out = decodeSlice(stdout, complete);
  const err = decodeSlice(stderr, complete);
  const part = ({ text, offset, nextOffset }: StreamText) => ({ text, offset, nextOffset });
  return {
    delta: formatDelta(out.text, err.text),
    lossy: out.lossy || err.lossy,
    cursor: { stdout: out.nextOffset, stderr: err.nextOffset },
    stdout: part(out),
    stderr: part(err),
  };
}
