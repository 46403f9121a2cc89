/**
 * A raw socket to the daemon, for tests that speak (or break) the framing by hand: arbitrary bytes,
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
  error?: { code: number; message: string; data?: { code: string } };
}

/** Frames a body (already JSON, or deliberately not) with its Content-Length header. */
export function frameBody(body: string | Buffer): Buffer {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  return Buffer.concat([Buffer.from(`Content-Length: ${bytes.length}\r\n\r\n`, 'ascii'), bytes]);
}

/** Frames a JSON-RPC message with its Content-Length header. */
export function frame(message: unknown): Buffer {
  return frameBody(JSON.stringify(message));
}

/** A raw connection that collects the messages it receives and notices when it is closed. */
export interface RawConnection {
  socket: Socket;
  /** Every message received so far, in order. */
  messages: RawMessage[];
  /** Resolves when the daemon closed the connection (or it broke). */
  closed: Promise<void>;
  isClosed(): boolean;
  send(message: unknown): void;
  sendBytes(bytes: Buffer | string): void;
  /** Frames `body` with a correct Content-Length and writes it. */
  sendBody(body: string | Buffer): void;
  /** Resolves with the answer to request `id` (or undefined if the connection closes first). */
  answer(id: number): Promise<RawMessage | undefined>;
  /** Sends a request and resolves with its response (or undefined if the connection closes first). */
  request(method: string, params: unknown): Promise<RawMessage | undefined>;
  close(): void;
}

let nextId = 1_000_000;

/** Opens a raw connection, destroyed when the test finishes. */
export function rawConnect(socketPath: string): Promise<RawConnection> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    let buffer = Buffer.alloc(0);
    let closed = false;
    const messages: RawMessage[] = [];
    const waiters = new Map<number, (message: RawMessage | undefined) => void>();
    const closedPromise = new Promise<void>((done) =>
      socket.once('close', () => {
        closed = true;
        for (const waiter of waiters.values()) waiter(undefined);
        waiters.clear();
        done();
      }),
    );
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const headerEnd = buffer.indexOf('\r\n\r\n');
        if (headerEnd === -1) return;
        const length = Number(/Content-Length: (\d+)/i.exec(buffer.subarray(0, headerEnd).toString())?.[1]);
        if (buffer.length < headerEnd + 4 + length) return;
        const message = JSON.parse(buffer.subarray(headerEnd + 4, headerEnd + 4 + length).toString()) as RawMessage;
        buffer = buffer.subarray(headerEnd + 4 + length);
        messages.push(message);
        if (typeof message.id === 'number') {
          waiters.get(message.id)?.(message);
          waiters.delete(message.id);
        }
      }
    });
    socket.on('error', () => {});
    const sendBytes = (bytes: Buffer | string) => {
      if (!socket.destroyed) socket.write(bytes);
    };
    const raw: RawConnection = {
      socket,
      messages,
      closed: closedPromise,
      isClosed: () => closed,
      send: (message) => sendBytes(frame(message)),
      sendBytes,
      sendBody: (body) => sendBytes(frameBody(body)),
      answer(id) {
        const received = messages.find((message) => message.id === id);
        if (received || closed) return Promise.resolve(received);
        return new Promise((done) => waiters.set(id, done));
      },
      request(method, params) {
        const id = ++nextId;
        const answer = raw.answer(id);
        raw.send({ jsonrpc: '2.0', id, method, params });
        return answer;
      },
      close: () => socket.destroy(),
    };
    onTestFinished(() => void socket.destroy());
    socket.once('connect', () => resolve(raw));
    socket.once('error', reject);
  });
}

/** Reads the token of a daemon's state dir. */
export function readTestToken(stateDir: string): string {
  return readFileSync(join(stateDir, 'token'), 'utf8').trim();
}

/** Opens a raw connection and authenticates it with the daemon's token. */
export async function rawAuthed(socketPath: string, stateDir: string): Promise<RawConnection> {
  const raw = await rawConnect(socketPath);
  const answer = await raw.request(Initialize.method, {
    protocolVersion: 1,
    token: readTestToken(stateDir),
    client: { name: 'raw' },
  });
  if (!answer?.result) throw new Error(`initialize failed: ${JSON.stringify(answer)}`);
  return raw;
}
