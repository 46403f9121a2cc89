/**
 * The stdio transport of `execd mcp`: newline-delimited JSON-RPC like the SDK's, but a message past
 * the bounds of `framing.ts` is answered with an error and skipped (the SDK's own transport closes
 * on a line over 10 MiB, and the server then exits without a word). An oversized line is never
 * held: its bytes are dropped as they arrive, but for a prefix that names its id.
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import {
  MAX_MCP_MESSAGE_BYTES,
  OVERSIZED_PREFIX_BYTES,
  oversizedLine,
  parseLine,
  type LineOutcome,
} from './framing.js';

/** A Transport over a readable and a writable stream (stdin and stdout). */
export class BoundedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private chunks: Buffer[] = [];
  private lineBytes = 0;
  /** Set while the current line passed the bound: its first bytes, kept for its id. */
  private oversized: Buffer | undefined;
  /** The last bytes of an oversized line, where a client may have written its id. */
  private tail: Buffer = Buffer.alloc(0);
  private closed = false;

  constructor(
    private readonly input: NodeJS.ReadableStream = process.stdin,
    private readonly output: NodeJS.WritableStream = process.stdout,
    private readonly maxBytes = MAX_MCP_MESSAGE_BYTES,
  ) {}

  private readonly onData = (chunk: Buffer | string) => {
    let data = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    for (let newline = data.indexOf(0x0a); newline !== -1; newline = data.indexOf(0x0a)) {
      this.take(data.subarray(0, newline));
      this.endLine();
      data = data.subarray(newline + 1);
    }
    if (data.length > 0) this.take(data);
  };

  private readonly onError = (error: Error) => this.onerror?.(error);

  /** Adds bytes to the current line, or drops them once it is past the bound. */
  private take(bytes: Buffer): void {
    if (bytes.length === 0) return;
    this.lineBytes += bytes.length;
    if (this.oversized) {
      this.tail = Buffer.concat([this.tail, bytes.subarray(-OVERSIZED_PREFIX_BYTES)]).subarray(-OVERSIZED_PREFIX_BYTES);
      return;
    }
    if (this.lineBytes <= this.maxBytes) {
      this.chunks.push(bytes);
      return;
    }
    const line = Buffer.concat([...this.chunks, bytes]);
    this.oversized = Buffer.from(line.subarray(0, OVERSIZED_PREFIX_BYTES));
    this.tail = Buffer.from(line.subarray(-OVERSIZED_PREFIX_BYTES));
    this.chunks = [];
  }

  private endLine(): void {
    let outcome: LineOutcome | undefined;
    if (this.oversized) {
      outcome = oversizedLine(this.lineBytes, this.oversized.toString('utf8'), this.tail.toString('utf8'));
    } else if (this.lineBytes > 0) {
      const line = Buffer.concat(this.chunks).toString('utf8').replace(/\r$/, '');
      if (line.trim().length > 0) outcome = parseLine(line);
    }
    this.chunks = [];
    this.lineBytes = 0;
    this.oversized = undefined;
    this.tail = Buffer.alloc(0);
    if (outcome === undefined) return;
    if ('message' in outcome) {
      this.onmessage?.(outcome.message);
      return;
    }
    this.onerror?.(new Error(outcome.refusal.error.message));
    // An answer without an id is one the client cannot match (and some refuse): stderr says it instead.
    if (outcome.refusal.id === null) process.stderr.write(`execd mcp: ${outcome.refusal.error.message}\n`);
    // write() never rejects: a stdout that is gone ends the server through its own close.
    else this.write(JSON.stringify(outcome.refusal)).catch(() => undefined);
  }

  private write(json: string): Promise<void> {
    return new Promise((resolve) => {
      if (this.closed) return resolve();
      if (this.output.write(`${json}\n`)) resolve();
      else this.output.once('drain', resolve);
    });
  }

  /** Starts reading messages. */
  start(): Promise<void> {
    this.input.on('data', this.onData);
    this.input.on('error', this.onError);
    return Promise.resolve();
  }

  /** Sends one message. */
  send(message: JSONRPCMessage): Promise<void> {
    return this.write(JSON.stringify(message));
  }

  /** Stops reading; what was buffered is dropped. */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    this.input.off('data', this.onData);
    this.input.off('error', this.onError);
    this.input.pause();
    this.chunks = [];
    this.onclose?.();
    return Promise.resolve();
  }
}
