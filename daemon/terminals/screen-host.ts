/**
 * The daemon's side of the screen worker (screen-worker.ts): one worker thread for every
 * terminal's screen, started at the first screen read and stopped when no screen is left, so the
 * emulator never blocks the event loop. A worker that fails is replaced at the next screen; the
 * renders it owed answer an empty screen.
 */
import { Worker } from 'node:worker_threads';
import type { ScreenReply, ScreenRequest } from './screen-worker.js';

let worker: Worker | undefined;
let nextId = 1;
let nextRequest = 1;
const open = new Set<number>();
const pending = new Map<number, (text: string) => void>();

function post(message: ScreenRequest, transfer: ArrayBuffer[] = []): void {
  worker?.postMessage(message, transfer);
}

function ensureWorker(): Worker {
  if (worker) return worker;
  const started = new Worker(new URL('./screen-worker.js', import.meta.url));
  started.unref();
  started.on('message', (reply: ScreenReply) => {
    const resolve = pending.get(reply.request);
    pending.delete(reply.request);
    resolve?.(reply.text);
  });
  const lost = () => {
    if (worker !== started) return;
    worker = undefined;
    open.clear();
    for (const resolve of pending.values()) resolve('');
    pending.clear();
  };
  started.on('error', lost);
  started.on('exit', lost);
  worker = started;
  return started;
}

/** One terminal's screen, emulated in the worker. */
export class RemoteScreen {
  private readonly id = nextId++;
  private disposed = false;

  constructor(cols: number, rows: number) {
    ensureWorker();
    open.add(this.id);
    post({ op: 'open', id: this.id, cols, rows });
  }

  /** Sends output to the emulator (copied: the caller keeps its buffer). */
  write(bytes: Uint8Array): void {
    if (this.disposed || bytes.length === 0 || !open.has(this.id)) return;
    const copy = new Uint8Array(bytes);
    post({ op: 'write', id: this.id, bytes: copy }, [copy.buffer]);
  }

  /** Follows the PTY's size, in order with the output. */
  resize(cols: number, rows: number): void {
    if (!this.disposed && open.has(this.id)) post({ op: 'resize', id: this.id, cols, rows });
  }

  /** The screen once the emulator caught up, or as far as it got after `waitMs`. */
  render(waitMs: number): Promise<string> {
    if (this.disposed || !open.has(this.id)) return Promise.resolve('');
    const request = nextRequest++;
    return new Promise((resolve) => {
      pending.set(request, resolve);
      post({ op: 'render', id: this.id, request, waitMs });
    });
  }

  /** The cursor's 1-based position once the output written before was parsed; undefined when the screen cannot tell. */
  cursor(waitMs: number): Promise<{ row: number; col: number } | undefined> {
    if (this.disposed || !open.has(this.id)) return Promise.resolve(undefined);
    const request = nextRequest++;
    return new Promise((resolve) => {
      pending.set(request, (text) => {
        const [row, col] = text.split(';').map(Number);
        resolve(row && col ? { row, col } : undefined);
      });
      post({ op: 'cursor', id: this.id, request, waitMs });
    });
  }

  /** Frees the emulator; the worker stops when it holds no screen. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    if (!open.delete(this.id)) return;
    post({ op: 'close', id: this.id });
    if (open.size === 0 && pending.size === 0 && worker) {
      const stopping = worker;
      worker = undefined;
      void stopping.terminate().catch(() => undefined);
    }
  }
}
