/**
 * Time-bounded regular expressions for `job/wait` `until.output` (docs/reconnect.md). JavaScript's engine
 * backtracks, so a pattern from a client can take exponential time; V8's linear-time engine is
 * experimental, behind a flag, and refuses back-references and lookaround. So a check runs on one
 * worker thread (started by the first check, ended after HELPER_IDLE_MS without one), on bounded
 * text (`MAX_WINDOW_BYTES`), and a check that passes `CHECK_BUDGET_MS` ends the thread (the next
 * check starts a fresh one) and fails the wait. Measured
 * (test/daemon/waits/job-wait-until.test.ts): a check of a simple pattern on 64 KiB costs well
 * under a millisecond on the thread; `^(a+)+$` on 40 a's and an x is cut at the budget while
 * another client's `config/get` answers in a few milliseconds.
 */
import { Worker } from 'node:worker_threads';
import { IdleRelease } from '../host/idle-release.js';
import type { RegexAnswer, RegexCheck } from './regex-worker.js';

/** Longest a single check may run. */
export const CHECK_BUDGET_MS = 250;
/** Text a pattern is checked against: the tail of each stream. */
export const MAX_WINDOW_BYTES = 64 * 1024;

interface Pending {
  check: RegexCheck;
  resolve: (outcome: boolean | 'timeout') => void;
}

/** One worker thread that checks patterns one at a time, each under `CHECK_BUDGET_MS`. */
export class RegexChecker {
  private worker: Worker | undefined;
  private readonly queue: Pending[] = [];
  private running: (Pending & { timer: NodeJS.Timeout | undefined }) | undefined;
  private readonly online = new WeakSet<Worker>();
  private nextId = 0;
  /** Ends the thread once no check came for HELPER_IDLE_MS (B10). */
  private readonly idleRelease = new IdleRelease(() => {
    const worker = this.worker;
    if (!worker || this.running || this.queue.length > 0) return false;
    this.worker = undefined;
    void worker.terminate().catch(() => {});
    return true;
  });

  /** True when `pattern` matches in `text`; 'timeout' when it ran out of time. */
  test(pattern: string, text: string): Promise<boolean | 'timeout'> {
    return new Promise((resolve) => {
      this.queue.push({ check: { id: ++this.nextId, pattern, text }, resolve });
      this.pump();
    });
  }

  /** Ends the thread (at shutdown). */
  async close(): Promise<void> {
    this.idleRelease.cancel();
    const worker = this.worker;
    this.worker = undefined;
    if (this.running) {
      clearTimeout(this.running.timer);
      this.running.resolve('timeout');
      this.running = undefined;
    }
    for (const pending of this.queue.splice(0)) pending.resolve('timeout');
    await worker?.terminate();
  }

  private pump(): void {
    if (this.running) return;
    const next = this.queue.shift();
    if (!next) {
      this.idleRelease.idle();
      return;
    }
    this.idleRelease.cancel();
    const worker = this.thread();
    // The budget is the pattern's: a fresh thread's start-up (tens of ms) does not count.
    const arm = () =>
      setTimeout(() => {
        // Stalled in the pattern: only ending the thread stops it.
        this.running = undefined;
        this.worker = undefined;
        void worker.terminate().catch(() => {});
        next.resolve('timeout');
        this.pump();
      }, CHECK_BUDGET_MS);
    const running = { ...next, timer: undefined as NodeJS.Timeout | undefined };
    this.running = running;
    if (this.online.has(worker)) running.timer = arm();
    else
      worker.once('online', () => {
        if (this.running === running) running.timer = arm();
      });
    worker.postMessage(next.check);
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(new URL('./regex-worker.js', import.meta.url));
    worker.once('online', () => this.online.add(worker));
    // Idle, the thread keeps no process alive.
    worker.unref();
    worker.on('message', (answer: RegexAnswer) => {
      const running = this.running;
      if (!running || running.check.id !== answer.id) return;
      clearTimeout(running.timer);
      this.running = undefined;
      running.resolve(answer.matched);
      this.pump();
    });
    worker.on('error', () => {
      if (this.worker === worker) this.worker = undefined;
      const running = this.running;
      if (running) {
        clearTimeout(running.timer);
        this.running = undefined;
        running.resolve(false);
        this.pump();
      }
    });
    this.worker = worker;
    return worker;
  }
}
