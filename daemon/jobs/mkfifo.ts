/**
 * Making a FIFO without stalling the event loop. Node has no `mkfifo(3)`, and even an asynchronous
 * `execFile('mkfifo')` forks on the main thread (a fork costs as much as the daemon's heap is
 * large), so one worker thread runs them: started on first use, never keeping the daemon alive,
 * ended after HELPER_IDLE_MS without a request.
 */
import { Worker } from 'node:worker_threads';
import { IdleRelease } from '../host/idle-release.js';

/** The worker's code: one `mkfifo -m 600` per request, answered with its id and an error text, if any. */
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { execFileSync } = require('node:child_process');
parentPort.on('message', ({ id, path }) => {
  try {
    execFileSync('mkfifo', ['-m', '600', '--', path], { stdio: ['ignore', 'ignore', 'pipe'] });
    parentPort.postMessage({ id });
  } catch (error) {
    const stderr = error && error.stderr ? String(error.stderr).trim() : '';
    parentPort.postMessage({ id, error: stderr || (error && error.message) || String(error) });
  }
});
`;

interface Pending {
  resolve: () => void;
  reject: (error: Error) => void;
}

let worker: Worker | undefined;
let nextId = 0;
const pending = new Map<number, Pending>();
const idleRelease = new IdleRelease(() => {
  const idle = worker;
  if (!idle || pending.size > 0) return false;
  worker = undefined;
  void idle.terminate().catch(() => {});
  return true;
});

/** Rejects every request in flight (the worker died) and lets the next request start a new one. */
function failAll(error: Error): void {
  worker = undefined;
  for (const request of pending.values()) request.reject(error);
  pending.clear();
}

function theWorker(): Worker {
  if (worker) return worker;
  const started = new Worker(WORKER_SOURCE, { eval: true });
  started.on('message', ({ id, error }: { id: number; error?: string }) => {
    const request = pending.get(id);
    pending.delete(id);
    if (pending.size === 0) {
      started.unref();
      idleRelease.idle();
    }
    if (error === undefined) request?.resolve();
    else request?.reject(new Error(`mkfifo failed: ${error}`));
  });
  started.on('error', (error) => failAll(error));
  started.on('exit', () => {
    if (worker === started) failAll(new Error('the mkfifo worker exited'));
  });
  worker = started;
  return started;
}

/** Creates a FIFO (mode 600) at `path`; rejects with the reason when it cannot. */
export function makeFifo(path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject });
    idleRelease.cancel();
    const thread = theWorker();
    // Kept alive while a request is in flight, so the answer is never lost.
    thread.ref();
    thread.postMessage({ id, path });
  });
}
