/**
 * The thread that writes a tree transfer's new small files (`tree-write-thread.ts`): each message
 * is a batch of files, written one after the other in the order given. A file is created with
 * `O_CREAT | O_EXCL | O_NOFOLLOW` at the path it was given (through its directory's descriptor,
 * which the sending thread keeps open until the batch is answered), then written, given its mode
 * where the umask took bits from it, its time, and closed. The first failure ends the batch; the
 * answer carries its errno code and message.
 */
import { closeSync, constants, fchmodSync, futimesSync, openSync, writeSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';
import type { WriteBatch, WriteBatchAnswer } from './tree-write-thread.js';

const CREATE_FILE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

function writeBatch(batch: WriteBatch): void {
  const bytes = new Uint8Array(batch.bytes);
  let offset = 0;
  for (const file of batch.files) {
    const fd = openSync(file.at, CREATE_FILE, file.mode);
    try {
      for (let written = 0; written < file.size;)
        written += writeSync(fd, bytes, offset + written, file.size - written, written);
      if (file.masked) fchmodSync(fd, file.mode);
      // A garbled time field decodes to NaN: the file keeps the time it was written.
      if (Number.isFinite(file.mtimeMs)) futimesSync(fd, file.mtimeMs / 1000, file.mtimeMs / 1000);
    } finally {
      closeSync(fd);
    }
    offset += file.size;
  }
}

parentPort?.on('message', (batch: WriteBatch) => {
  let answer: WriteBatchAnswer;
  try {
    writeBatch(batch);
    answer = { id: batch.id };
  } catch (error) {
    const failure = error as NodeJS.ErrnoException;
    answer = { id: batch.id, failure: { code: failure.code, message: failure.message } };
  }
  parentPort?.postMessage(answer);
});
