/**
 * A raw socket client for tests that must send what no well-behaved client sends: arbitrary bytes,
 * broken frames, oversized messages. It parses the daemon's answers itself.
 */
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { Initialize } from '../../protocol/methods.js';

/** One JSON-RPC message the daemon sent. */
export interface RawMessage {
  id?: number | string | null;
  method?: string;
  result?: unknown;
  error?: { code: number; message: string; data?: { code?: string } };
}

/** A raw connection and what came back on it. */
export interface RawClient {
  socket: Socket;
  /** Every message received so far, in order. */
  messages: RawMessage[];
  /** Resolves when the daemon closed the connection (or it broke). */
  closed: Promise<void>;
  readonly isClosed: boolean;
  /** Writes raw bytes. */
  write(bytes: string | Buffer): void;
  /** Frames `body` with a correct Content-Length and writes it. */
  sendBody(body: string | Buffer): void;
  /** Resolves with the answer to request `id` (or undefined if the connection closes first). */
  answer(id: number): Promise<RawMessage | undefined>;
  /** Sends a request and resolves with its response (or undefined if the connection closes first). */
  request(method: string, params: unknown): Promise<RawMessage | undefined>;
  close(): void;
}

/** Frames a body with LSP framing. */
export function frame(body: string | Buffer): Buffer {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  return Buffer.concat([Buffer.from(`Content-Length: ${bytes.length}\r\n\r\n`, 'ascii'), bytes]);
}

/** Reads the token of a daemon's state dir. */
export function readTestToken(stateDir: string): string {
  return readFileSync(join(stateDir, 'token'), 'utf8').trim();
}

let nextId = 1_000_000;

/** Opens a raw connection to `socketPath`, destroyed when the test finishes. */
export function rawConnect(socketPath: string): Promise<RawClient> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    const messages: RawMessage[] = [];
    const waiters = new Map<number, (message: RawMessage | undefined) => void>();
    let buffer = Buffer.alloc(0);
    let isClosed = false;
    const closed = new Promise<void>((done) =>
      socket.once('close', () => {
        isClosed = true;
        for (const waiter of waiters.values()) waiter(undefined);
        waiters.clear();
        done();
      }),
    );
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end === -1) return;
        const length = Number(/Content-Length: (\d+)/i.exec(buffer.subarray(0, end).toString('ascii'))?.[1]);
        if (buffer.length < end + 4 + length) return;
        const message = JSON.parse(buffer.subarray(end + 4, end + 4 + length).toString('utf8')) as RawMessage;
        buffer = buffer.subarray(end + 4 + length);
        messages.push(message);
        if (typeof message.id === 'number') {
          waiters.get(message.id)?.(message);
          waiters.delete(message.id);
        }
      }
    });
    const client: RawClient = {
      socket,
      messages,
      closed,
      get isClosed() {
        return isClosed;
      },
      write: (bytes) => {
        if (!socket.destroyed) socket.write(bytes);
      },
      sendBody: (body) => client.write(frame(body)),
      answer(id) {
        const received = messages.find((message) => message.id === id);
        if (received || isClosed) return Promise.resolve(received);
        return new Promise((done) => waiters.set(id, done));
      },
      request(method, params) {
        const id = ++nextId;
        const answer = client.answer(id);
        client.sendBody(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
        return answer;
      },
      close: () => socket.destroy(),
    };
    onTestFinished(() => void socket.destroy());
    socket.once('connect', () => resolve(client));
    socket.once('error', reject);
  });
}

/** Opens a raw connection and authenticates it with the daemon's token. */
export async function rawAuthed(socketPath: string, stateDir: string): Promise<RawClient> {
  const client = await rawConnect(socketPath);
  const answer = await client.request(Initialize.method, {
    protocolVersion: 1,
    token: readTestToken(stateDir),
    client: { name: 'raw' },
  });
  if (!answer?.result) throw new Error(`initialize failed: ${JSON.stringify(answer)}`);
  return client;
}
