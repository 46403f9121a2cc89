/**
 * The thread that writes tree transfers' new small files in batches (docs/files.md), so the
 * kernel's work of creating and filling them runs beside the archive's parsing and checks instead
 * of after them. One thread per process, started at first use and ended after `IDLE_MS` without a
 * batch; while batches are out it keeps the process alive, idle it does not.
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

/** One new file of a batch: its path (through its directory's descriptor), size, mode and time. */
export interface FileToWrite {
  at: string;
  size: number;
  mode: number;
  /** The umask takes bits from `mode`, so it is set again once the file is written. */
  masked: boolean;
  /** Modification time in milliseconds; NaN keeps the time of the write. */
  mtimeMs: number;
}

/** What the writing thread is sent: files, and all their bytes one after the other. */
export interface WriteBatch {
  id: number;
  files: FileToWrite[];
  bytes: ArrayBuffer;
}

/** The writing thread's answer: nothing, or the first failure (its errno code and message). */
export interface WriteBatchAnswer {
  id: number;
  failure?: { code?: string; message: string };
}

const WORKER_FILE = new URL('./tree-write-worker.js', import.meta.url);

/**
 * True where a second thread can run beside this one (with one core it would only add handoffs)
 * and its built script is here (TypeScript sources run as they are, as by the tests, have none).
 */
export const WRITE_THREAD_HELPS = availableParallelism() > 1 && existsSync(fileURLToPath(WORKER_FILE));

const IDLE_MS = 2000;

interface Waiting {
  resolve: () => void;
  reject: (error: Error) => void;
}

class WriteThread {
  private worker: Worker | undefined;
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 0;
  private idle: NodeJS.Timeout | undefined;

  /** Writes `files` (their bytes one after the other in `bytes`, which is handed over); rejects with the first failure. */
  write(files: FileToWrite[], bytes: ArrayBuffer): Promise<void> {
    const worker = this.worker ?? this.start();
    clearTimeout(this.idle);
    worker.ref();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.postMessage({ id, files, bytes } satisfies WriteBatch, [bytes]);
    });
  }

  /** Ends the thread now; batches still out fail. */
  async end(): Promise<void> {
    await this.worker?.terminate().catch(() => {});
  }

  private start(): Worker {
    // None of the embedding process's flags (an `--input-type` would stop the thread from starting).
    const worker = new Worker(WORKER_FILE, { execArgv: [] });
    worker.on('message', (answer: WriteBatchAnswer) => {
      const waiting = this.waiting.get(answer.id);
      this.waiting.delete(answer.id);
      if (answer.failure)
        waiting?.reject(Object.assign(new Error(answer.failure.message), { code: answer.failure.code }));
      else waiting?.resolve();
      if (this.waiting.size > 0) return;
      worker.unref();
      this.idle = setTimeout(() => {
        worker.terminate().catch(() => {});
      }, IDLE_MS).unref();
    });
    const lost = () => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      clearTimeout(this.idle);
      for (const waiting of this.waiting.values()) waiting.reject(new Error('the file-writing thread ended'));
      this.waiting.clear();
    };
    worker.on('error', lost);
    worker.on('exit', lost);
    this.worker = worker;
    return worker;
  }
}

/** The process's writing thread. */
export const writeThread = new WriteThread();
