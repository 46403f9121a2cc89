/**
 * Pure arithmetic of job reads (SPEC §1.6): turning a slice of a stream's bytes into text without
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

/** Decoded text of a slice and the offset a next read starts from. */
export interface StreamText {
  text: string;
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
    nextOffset: slice.offset + end,
    lossy: slice.lossy,
  };
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

/** The outcome of one consuming read: the delta, whether bytes were lost, and the advanced cursor. */
export interface ConsumedRead {
  delta: string;
  lossy: boolean;
  cursor: ReadCursor;
}

/** Consumes both streams' slices (taken at the cursor) and formats the delta. */
export function consumeSlices(stdout: StreamSlice, stderr: StreamSlice, complete: boolean): ConsumedRead {
  const out = decodeSlice(stdout, complete);
  const err = decodeSlice(stderr, complete);
  return {
    delta: formatDelta(out.text, err.text),
    lossy: out.lossy || err.lossy,
    cursor: { stdout: out.nextOffset, stderr: err.nextOffset },
  };
}
