/**
 * The open stdin of a background job started with `keepStdinOpen` (SPEC §9.4): a FIFO in the
 * session's log directory that the job reads as its stdin and the daemon writes `job/write` data
 * into, without ever blocking (a job that does not read fills the queue up to `maxStdinBytes`,
 * then writes are refused). Closed with `eof`, when the job settles, or when its reader is gone.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, constants, openSync, unlinkSync } from 'node:fs';
import { Socket } from 'node:net';
import { ExecdError } from '../../protocol/errors.js';

/** A job's writable stdin. */
export class JobStdin {
  private socket: Socket | undefined;
  private readerFd: number | undefined;

  /** Creates the FIFO at `path` and opens both its ends (the job's end is opened again by the spawn, by path). */
  constructor(readonly path: string) {
    execFileSync('mkfifo', ['-m', '600', path]);
    // A reader first, so that opening the writer neither blocks nor fails; kept until the job has its own.
    this.readerFd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    const writer = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
    this.socket = new Socket({ fd: writer, readable: false, writable: true });
    // A job that exited without reading: EPIPE closes its stdin, nothing else.
    this.socket.on('error', () => this.close());
  }

  /** True once closed. */
  get closed(): boolean {
    return this.socket === undefined;
  }

  /** The job has spawned (its stdin is open) or failed to: drop the daemon's reader and the FIFO's name. */
  spawned(): void {
    if (this.readerFd !== undefined) closeSync(this.readerFd);
    this.readerFd = undefined;
    try {
      unlinkSync(this.path);
    } catch {
      // Already removed.
    }
  }

  /** Queues `data` (and closes after it with `eof`); STDIN_CLOSED once closed, LIMIT_EXCEEDED when the job stopped reading. */
  write(jobId: string, data: string, eof: boolean, maxQueuedBytes: number): { written: number } | ExecdError {
    const socket = this.socket;
    if (!socket || socket.destroyed) return new ExecdError('STDIN_CLOSED', `stdin of job ${jobId} is closed`);
    const bytes = Buffer.from(data);
    if (socket.writableLength + bytes.length > maxQueuedBytes) {
      return new ExecdError(
        'LIMIT_EXCEEDED',
        `job ${jobId} is not reading its stdin: ${socket.writableLength} bytes already queued (maxStdinBytes ${maxQueuedBytes})`,
      );
    }
    if (bytes.length > 0) socket.write(bytes);
    if (eof) this.close();
    return { written: bytes.length };
  }

  /** Closes stdin: the job reads end-of-file once it has read what was queued. */
  close(): void {
    const socket = this.socket;
    this.socket = undefined;
    socket?.end();
    this.spawned();
  }
}
