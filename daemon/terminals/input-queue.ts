/**
 * A terminal's input, written to the PTY in chunks with back-pressure (docs/terminals.md). The
 * PTY master is a blocking descriptor for the PTY library (a master cannot be reopened), and a
 * program that echoes its input slowly (readline: ~7.5 s per MiB) kept the event loop in one
 * `write` for that long, stalling every client. Here the descriptor is non-blocking: each step
 * writes what the kernel takes now, and on EAGAIN waits a few milliseconds for the program to read.
 */
import { writeSync } from 'node:fs';

/** Largest piece handed to one `write` (the PTY's input buffer holds about 4 KiB). */
const CHUNK_BYTES = 4_096;
/** Most bytes written in one turn of the event loop before yielding to other work. */
const TURN_BYTES = 64 * 1024;
/** Wait after the kernel refused more (the program has not read what it has yet). */
const RETRY_MS = 3;

/** Queued input of one PTY, written without ever blocking the event loop. */
export class InputQueue {
  private readonly chunks: Buffer[] = [];
  private queued = 0;
  private timer: NodeJS.Timeout | undefined;
  private scheduled = false;
  private closed = false;
  private readonly drainWaiters = new Set<() => void>();

  /**
   * @param fd the PTY master, already non-blocking
   * @param onClosed called once when a write fails for good (the program is gone)
   */
  constructor(
    private readonly fd: number,
    private readonly onClosed: () => void = () => {},
  ) {}

  /** Bytes queued and not yet taken by the PTY. */
  get pending(): number {
    return this.queued;
  }

  /** Queues `data`; false when the queue is closed (the program exited). */
  push(data: Buffer): boolean {
    if (this.closed) return false;
    if (data.length === 0) return true;
    this.chunks.push(data);
    this.queued += data.length;
    this.schedule(0);
    return true;
  }

  /** Resolves once everything queued so far was written (or the queue closed). */
  drained(): Promise<void> {
    if (this.queued === 0 || this.closed) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.add(resolve));
  }

  /** Drops what is queued and stops writing (the program exited or the terminal closed). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.timer);
    this.chunks.length = 0;
    this.queued = 0;
    this.settleWaiters();
    this.onClosed();
  }

  /** Drops what is queued but keeps the queue open (a send that timed out or was cancelled). */
  discard(): void {
    this.chunks.length = 0;
    this.queued = 0;
    this.settleWaiters();
  }

  private schedule(delayMs: number): void {
    if (this.scheduled || this.closed) return;
    this.scheduled = true;
    const step = () => {
      this.scheduled = false;
      this.step();
    };
    if (delayMs === 0) setImmediate(step);
    else {
      this.timer = setTimeout(step, delayMs);
      this.timer.unref();
    }
  }

  private step(): void {
    let turn = 0;
    while (this.chunks.length > 0 && !this.closed) {
      const head = this.chunks[0]!;
      let written: number;
      try {
        written = writeSync(this.fd, head, 0, Math.min(head.length, CHUNK_BYTES));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') {
          this.schedule(RETRY_MS);
          return;
        }
        this.close();
        return;
      }
      if (written >= head.length) this.chunks.shift();
      else this.chunks[0] = head.subarray(written);
      this.queued -= written;
      turn += written;
      if (turn >= TURN_BYTES) {
        this.schedule(0);
        return;
      }
    }
    if (this.queued === 0) this.settleWaiters();
  }

  private settleWaiters(): void {
    for (const resolve of [...this.drainWaiters]) resolve();
    this.drainWaiters.clear();
  }
}
