/** A raw socket to the daemon, for tests that speak (or break) the framing by hand. */
import { connect, type Socket } from 'node:net';

/** Frames a JSON-RPC message with its Content-Length header. */
export function frame(message: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(message), 'utf8');
  return Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`, 'ascii'), body]);
}

/** A raw connection that collects the messages it receives and notices when it is closed. */
export interface RawConnection {
  socket: Socket;
  messages: Array<{ id?: number; result?: unknown; error?: { code: number; message: string; data?: { code: string } } }>;
  closed: Promise<void>;
  isClosed(): boolean;
  send(message: unknown): void;
  sendBytes(bytes: Buffer | string): void;
}

/** Opens a raw connection. */
export function rawConnect(socketPath: string): Promise<RawConnection> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    let buffer = Buffer.alloc(0);
    let closed = false;
    const messages: RawConnection['messages'] = [];
    const closedPromise = new Promise<void>((done) =>
      socket.once('close', () => {
        closed = true;
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
        messages.push(JSON.parse(buffer.subarray(headerEnd + 4, headerEnd + 4 + length).toString()));
        buffer = buffer.subarray(headerEnd + 4 + length);
      }
    });
    socket.on('error', () => {});
    socket.once('connect', () =>
      resolve({
        socket,
        messages,
        closed: closedPromise,
        isClosed: () => closed,
        send: (message) => socket.write(frame(message)),
        sendBytes: (bytes) => socket.write(bytes),
      }),
    );
    socket.once('error', reject);
  });
}
