/**
 * The open stdin of a background job started with `keepStdinOpen` (docs/jobs.md): a FIFO in the
 * session's log directory that the job reads as its stdin and the daemon writes `job/write` data
 * into, without ever blocking (a job that does not read fills its queue up to `maxStdinBytes`, all
 * jobs together up to `maxTotalStdinBytes`, then writes are refused). Closed with `eof`, when the
 * job settles, or when its reader is gone.
 */
import { closeSync, constants, openSync, unlinkSync } from 'node:fs';
import { Socket } from 'node:net';
import { ExecdError } from '../../protocol/errors.js';
import { makeFifo } from './mkfifo.js';
import type { StdinPool } from './stdin-pool.js';

/** The bounds a `job/write` is held to. */
export interface StdinLimits {
  /** Unread bytes of this job's stdin (`maxStdinBytes`). */
  maxQueuedBytes: number;
  /** Unread bytes of every job's stdin together (`maxTotalStdinBytes`). */
  maxTotalQueuedBytes: number;
}

/** A job's writable stdin. */
export class JobStdin {
  private socket: Socket | undefined;
  /** The writer until its last queued byte is gone (after `close()` too: what `eof` left still counts). */
  private queue: Socket | undefined;
  private readerFd: number | undefined;

  /**
   * Makes the FIFO at `path` (off the event loop, see `makeFifo`) and opens both its ends; the
   * job's end is opened again by the spawn, by path. Counted in `pool` until closed.
   */
  static async create(path: string, pool: StdinPool): Promise<JobStdin> {
    await makeFifo(path);
    return new JobStdin(path, pool);
  }

  private constructor(
    readonly path: string,
    private readonly pool: StdinPool,
  ) {
    try {
      // A reader first, so that opening the writer neither blocks nor fails; kept until the job has its own.
      this.readerFd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
      const writer = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
      this.socket = new Socket({ fd: writer, readable: false, writable: true });
    } catch (error) {
      this.spawned();
      throw error;
    }
    // A job that exited without reading: EPIPE closes its stdin, nothing else.
    this.socket.on('error', () => this.close());
    this.queue = this.socket;
    this.socket.once('close', () => {
      this.queue = undefined;
      pool.delete(this);
    });
    pool.add(this);
  }

  /** Bytes written and not yet taken by the job. */
  get queuedBytes(): number {
    return this.queue?.writableLength ?? 0;
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

  /**
   * Queues `data` (and closes after it with `eof`); STDIN_CLOSED once closed, LIMIT_EXCEEDED when
   * the job stopped reading or the jobs together hold `maxTotalQueuedBytes` unread.
   */
  write(jobId: string, data: string, eof: boolean, limits: StdinLimits): { written: number } | ExecdError {
    const socket = this.socket;
    if (!socket || socket.destroyed) return new ExecdError('STDIN_CLOSED', `stdin of job ${jobId} is closed`);
    const size = Buffer.byteLength(data);
    if (socket.writableLength + size > limits.maxQueuedBytes) {
      return new ExecdError(
        'LIMIT_EXCEEDED',
        `job ${jobId} is not reading its stdin: ${socket.writableLength} bytes already queued (maxStdinBytes ${limits.maxQueuedBytes})`,
      );
    }
    const total = this.pool.queuedBytes;
    if (total + size > limits.maxTotalQueuedBytes) {
      return new ExecdError(
        'LIMIT_EXCEEDED',
        `jobs are not reading their stdin: ${total} bytes already queued across all jobs (maxTotalStdinBytes ${limits.maxTotalQueuedBytes})`,
      );
    }
    const bytes = Buffer.from(data);
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
