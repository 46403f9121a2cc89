/**
 * The client's side of a transfer stream (docs/files.md, `TRANSFER_STREAM_PREFIX`): a connection of its
 * own that carries one upload's or download's bytes raw, flow-controlled by TCP. It holds at most a
 * buffer of each side, whatever the file's size.
 */
import type { Hash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { MAX_TRANSFER_STREAM_PREAMBLE, transferStreamPreamble } from '../protocol/fs.js';
import { FileAppender, fileToSocket } from '../shared/byte-pump.js';

/** How the daemon answered on a stream: `ok <bytes>`, or the reason it gave. */
function checkAnswer(line: string, bytes: number): void {
  if (line === `ok ${bytes}`) return;
  const reason = line.startsWith('error ') ? line.slice('error '.length) : `unexpected answer ${JSON.stringify(line)}`;
  throw new Error(`the daemon refused the transfer stream: ${reason}`);
}

/** The first line the daemon writes on `socket` before it hangs up ('' if none). */
export function answerOf(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      if (text.length < MAX_TRANSFER_STREAM_PREAMBLE) text += chunk.toString('utf8');
    });
    socket.once('close', () => resolve(text.split('\n')[0]!));
  });
}

/**
 * Sends `total` bytes of `file` on `socket` for the upload `token` names, hashing them, and
 * resolves once the daemon has written them all. The socket is the caller's to destroy.
 */
export async function sendOverStream(
  socket: Socket,
  token: string,
  file: FileHandle,
  total: number,
  hash: Hash,
  onProgress?: (done: number, total: number) => void,
): Promise<void> {
  socket.on('error', () => {}); // a refusal hangs up: the answer says why, or the close does
  const answer = answerOf(socket);
  let sent: number;
  try {
    socket.write(transferStreamPreamble(token, total));
    sent = await fileToSocket(file, total, socket, (bytes, done) => {
      hash.update(bytes);
      onProgress?.(done, total);
    });
  } catch (error) {
    // The daemon's own reason, if it gave one, says more than a broken pipe.
    socket.destroySoon();
    const line = await answer;
    if (line !== '') checkAnswer(line, total);
    throw error;
  }
  if (sent !== total) throw new Error(`the file shrank to ${sent} bytes while it was sent (${total} expected)`);
  checkAnswer(await answer, total);
}

/**
 * Receives the download `token` names (`size` bytes) from `socket` into `file` from offset 0,
 * hashing them. The socket is the caller's to destroy.
 */
export async function receiveOverStream(
  socket: Socket,
  token: string,
  file: FileHandle,
  size: number,
  hash: Hash,
  onProgress?: (done: number, total: number) => void,
): Promise<void> {
  socket.write(transferStreamPreamble(token, 0));
  const sink = new FileAppender(file, 0);
  let head: Buffer | undefined = Buffer.alloc(0);
  let written = 0;
  for await (const chunk of socket) {
    let bytes = chunk as Buffer;
    if (head !== undefined) {
      head = Buffer.concat([head, bytes]);
      const newline = head.indexOf(0x0a);
      if (newline < 0) {
        if (head.length > MAX_TRANSFER_STREAM_PREAMBLE) throw new Error('the daemon sent no answer line');
        continue;
      }
      checkAnswer(head.subarray(0, newline).toString('utf8'), size);
      bytes = head.subarray(newline + 1);
      head = undefined;
    }
    if (written + bytes.length > size) throw new Error(`the daemon sent more than the ${size} bytes announced`);
    hash.update(bytes);
    written += bytes.length;
    await sink.add(bytes);
    onProgress?.(written, size);
  }
  await sink.flush();
  if (head !== undefined) throw new Error('the transfer stream closed before the daemon answered');
  if (written !== size) throw new Error(`${written} bytes arrived, not ${size}`);
}
