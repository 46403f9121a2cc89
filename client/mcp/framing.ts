/**
 * The MCP stdio framing with bounds (pure): one JSON-RPC message per line, at most
 * `MAX_MCP_MESSAGE_BYTES` per line and `MAX_MCP_DEPTH` levels of nesting. A line past either bound
 * is refused with an answer naming the bound, and the next line is read as usual: one bad message
 * never ends the server.
 */
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** Largest message `execd mcp` reads, in bytes (a line; the newline not counted). */
export const MAX_MCP_MESSAGE_BYTES = 10 * 1024 * 1024;

/** Deepest nesting of arrays and objects a message may have (the tools' arguments are flat). */
export const MAX_MCP_DEPTH = 64;

/** How much of each end of an oversized line is kept to find its request id. */
const ID_PREFIX_BYTES = 4096;

/** JSON-RPC error codes used for refused lines. */
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;

/** A JSON-RPC id, or null when the line's id could not be known. */
export type LineId = string | number | null;

/** What one line yields: a message to dispatch, or an error answer to send back. */
export type LineOutcome =
  { message: JSONRPCMessage } | { refusal: { jsonrpc: '2.0'; id: LineId; error: { code: number; message: string } } };

/** The deepest nesting of `[`/`{` in JSON text, stopping as soon as it passes `limit` (strings skipped). */
export function nestingDepth(text: string, limit = Number.POSITIVE_INFINITY): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return deepest;
}

const ID_VALUE = String.raw`(-?\d{1,15}|"(?:[^"\\]|\\.){0,256}")`;
/** A top-level `"id"` written before `"params"`. */
const LEADING_ID = new RegExp(String.raw`"id"\s*:\s*${ID_VALUE}`);
/** A top-level `"id"` written last, just before the message's closing brace. */
const TRAILING_ID = new RegExp(String.raw`[,{]\s*"id"\s*:\s*${ID_VALUE}\s*\}\s*$`);

/**
 * The request id of a message known only by its beginning and its end: a top-level `"id"` met
 * before `"params"`, or written as the last key. Null when there is none to be sure of.
 */
export function idFromEnds(head: string, tail = ''): LineId {
  const found = LEADING_ID.exec(head.split('"params"')[0]!) ?? TRAILING_ID.exec(tail);
  if (!found) return null;
  try {
    return JSON.parse(found[1]!) as string | number;
  } catch {
    return null;
  }
}

function refusal(id: LineId, code: number, message: string): LineOutcome {
  return { refusal: { jsonrpc: '2.0', id, error: { code, message } } };
}

/** The refusal of a line of `bytes` bytes, past `MAX_MCP_MESSAGE_BYTES`, that begins with `head` and ends with `tail`. */
export function oversizedLine(bytes: number, head: string, tail: string): LineOutcome {
  return refusal(
    idFromEnds(head, tail),
    INVALID_REQUEST,
    `message of ${bytes} bytes refused: execd mcp reads messages of at most ${MAX_MCP_MESSAGE_BYTES} bytes (10 MiB)`,
  );
}

/** The top-level id of a parsed message, null when it has none usable. */
function idOf(value: unknown): LineId {
  const id = (value as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** Parses one line within the bounds: the message, or the answer refusing it. */
export function parseLine(line: string): LineOutcome {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return refusal(
      idFromEnds(line.slice(0, ID_PREFIX_BYTES), line.slice(-ID_PREFIX_BYTES)),
      PARSE_ERROR,
      'message refused: not valid JSON',
    );
  }
  // Checked before any schema walks the value: recursion over a deep value overflows the stack.
  if (nestingDepth(line, MAX_MCP_DEPTH) > MAX_MCP_DEPTH) {
    return refusal(
      idOf(value),
      INVALID_REQUEST,
      `message refused: nested more than ${MAX_MCP_DEPTH} levels deep (arrays and objects); tool arguments are flat`,
    );
  }
  const parsed = JSONRPCMessageSchema.safeParse(value);
  if (!parsed.success) return refusal(idOf(value), INVALID_REQUEST, 'message refused: not a JSON-RPC 2.0 message');
  return { message: parsed.data };
}

/** Bytes of each end of an oversized line kept for `idFromEnds`. */
export const OVERSIZED_PREFIX_BYTES = ID_PREFIX_BYTES;
