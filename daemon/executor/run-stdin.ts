/**
 * The open stdin of a foreground run started with `keepStdinOpen`: a FIFO the command reads as its
 * stdin (opened by path, whichever way it is spawned) and `shell/write` writes into. A write is
 * answered once the pipe took it, so a client that waits for each answer never has more than one
 * chunk queued here: the command's reading paces the caller, with no size cap.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, constants, openSync, unlinkSync } from 'node:fs';
import { Socket } from 'node:net';
import { ExecdError } from '../../protocol/errors.js';

/** A foreground run's writable stdin. */
export class RunStdin {
  private socket: Socket | undefined;
  private readerFd: number | undefined;
  private readonly waiting = new Set<() => void>();
  /**
   * An end asked for before the command opened its stdin. Until then the writer stays open: a
   * spawner process opens the FIFO by path a moment later, and that open would block for good on
   * a FIFO whose only writer is gone.
   */
  private endWhenSpawned = false;
  private isSpawned = false;

  /** Creates the FIFO at `path` and opens both ends; the command opens its end again by path. */
  constructor(readonly path: string) {
    execFileSync('mkfifo', ['-m', '600', path]);
    // A reader first, so that opening the writer neither blocks nor fails.
    this.readerFd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    const writer = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
    const socket = new Socket({ fd: writer, readable: false, writable: true });
    // The command exited or closed its stdin: EPIPE ends the stdin, nothing else.
    socket.on('error', () => this.destroy());
    socket.on('drain', () => this.wake());
    socket.on('close', () => this.wake());
    this.socket = socket;
  }

  /** The command has spawned (or failed to): drop the daemon's reader and the FIFO's name. */
  spawned(): void {
    this.isSpawned = true;
    if (this.endWhenSpawned) this.socket?.end();
    if (this.readerFd !== undefined) closeSync(this.readerFd);
    this.readerFd = undefined;
    try {
      unlinkSync(this.path);
    } catch {
      // Already removed.
    }
  }

  /** Writes `bytes` (then closes with `eof`); resolves once the pipe took them or stdin is gone. */
  async write(bytes: Buffer, eof: boolean): Promise<{ written: number } | ExecdError> {
    const socket = this.socket;
    if (!socket || socket.destroyed || socket.writableEnded) {
      return new ExecdError('STDIN_CLOSED', 'the stdin of this run is closed');
    }
    const flushed = bytes.length === 0 || socket.write(bytes);
    if (eof && this.isSpawned) socket.end();
    else if (eof) this.endWhenSpawned = true;
    if (!flushed) await new Promise<void>((resolve) => this.waiting.add(resolve));
    if (this.socket === undefined && !eof && !flushed) {
      return new ExecdError('STDIN_CLOSED', 'the command closed its stdin before reading all of it');
    }
    return { written: bytes.length };
  }

  /** Ends stdin at once (the run is over): pending writes are answered, the FIFO is gone. */
  destroy(): void {
    const socket = this.socket;
    this.socket = undefined;
    socket?.destroy();
    this.spawned();
    this.wake();
  }

  private wake(): void {
    const waiting = [...this.waiting];
    this.waiting.clear();
    for (const resolve of waiting) resolve();
  }
}
