/**
 * Tells a transfer stream (docs/files.md, `TRANSFER_STREAM_PREFIX`) from a JSON-RPC connection by its
 * first bytes. A JSON-RPC peer starts with `Content-Length:`, so one byte usually decides and
 * nothing waits; a stream's preamble line is read whole (at most `MAX_TRANSFER_STREAM_PREAMBLE`).
 */
import { MAX_TRANSFER_STREAM_PREAMBLE, TRANSFER_STREAM_PREFIX } from '../../protocol/fs.js';

/** What the first bytes of a connection are. */
export type PreambleVerdict =
  | { kind: 'rpc' }
  | { kind: 'more' }
  | { kind: 'stream'; token: string; bytes: number; rest: Buffer }
  | { kind: 'bad'; reason: string };

/** Reads the bytes a connection sent so far (pure). */
export function readPreamble(seen: Buffer): PreambleVerdict {
  const head = seen.subarray(0, TRANSFER_STREAM_PREFIX.length).toString('latin1');
  if (!TRANSFER_STREAM_PREFIX.startsWith(head)) return { kind: 'rpc' };
  const newline = seen.indexOf(0x0a);
  if (newline < 0) {
    if (seen.length < MAX_TRANSFER_STREAM_PREAMBLE) return { kind: 'more' };
    return { kind: 'bad', reason: `transfer stream preamble longer than ${MAX_TRANSFER_STREAM_PREAMBLE} bytes` };
  }
  const line = seen.subarray(TRANSFER_STREAM_PREFIX.length, newline).toString('latin1');
  const match = /^([A-Za-z0-9_-]{43}) (\d{1,15})$/.exec(line);
  if (!match) return { kind: 'bad', reason: 'malformed transfer stream preamble' };
  return { kind: 'stream', token: match[1]!, bytes: Number(match[2]), rest: seen.subarray(newline + 1) };
}
