/**
 * Time-bounded regular expressions for `job/wait` `until.output` (docs/reconnect.md). JavaScript's engine
 * backtracks, so a pattern from a client can take exponential time; V8's linear-time engine is
 * experimental, behind a flag, and refuses back-references and lookaround. So a check runs on a
 * worker thread (started when a check needs one, ended after HELPER_IDLE_MS without one), on
 * bounded text (`MAX_WINDOW_BYTES`), and a check that passes `CHECK_BUDGET_MS` ends its thread (the
 * next check starts a fresh one) and fails the wait. Measured
 * (test/daemon/waits/job-wait-until.test.ts): a check of a simple pattern on 64 KiB costs well
 * under a millisecond on the thread; `^(a+)+$` on 40 a's and an x is cut at the budget while
 * another client's `config/get` answers in a few milliseconds.
 *
 * Sessions share the threads fairly: each session's checks wait in a queue of their own, a
 * session has at most one check running at a time, and a free thread takes the oldest check of
 * the next waiting session in turn. A session whose check was cut at the budget in the last
 * `SLOW_MEMORY_MS` is slow: it never takes the last free thread (it starts a fresh one for itself
 * while there are fewer than `PATTERN_THREADS`, or waits), and once a check was cut a spare
 * thread is kept started. So one session flooding slow patterns holds one thread and pays for its
 * threads' start-up itself, while another session's check runs at once on the spare; with more
 * flooding sessions, they take turns on the one thread. 40 slow patterns of one session delayed
 * another session's simple wait by 13 s on one shared queue, and by well under 500 ms this way
 * (test/daemon/waits/pattern-share.test.ts).
 */
import { Worker } from 'node:worker_threads';
import { IdleRelease } from '../host/idle-release.js';
import type { RegexAnswer, RegexCheck } from './regex-worker.js';

/** Longest a single check may run. */
export const CHECK_BUDGET_MS = 250;
/** Text a pattern is checked against: the tail of each stream. */
export const MAX_WINDOW_BYTES = 64 * 1024;
/** Threads the checks run on at most (a session uses one at a time). */
export const PATTERN_THREADS = 2;
/** How long a session counts as slow after one of its checks was cut at the budget. */
const SLOW_MEMORY_MS = 10_000;

interface Pending {
  check: RegexCheck;
  owner: string;
  resolve: (outcome: boolean | 'timeout') => void;
}

/** One thread, and the check it runs. */
interface Slot {
  worker: Worker;
  online: boolean;
  running: (Pending & { timer: NodeJS.Timeout | undefined }) | undefined;
}

/** Worker threads that check patterns, each check under `CHECK_BUDGET_MS`, sessions in turn. */
export class RegexChecker {
  private slots: Slot[] = [];
  /** Checks waiting, by session; the map's order is the turn order (a served session goes last). */
  private readonly queues = new Map<string, Pending[]>();
  private nextId = 0;
  /** Sessions whose check was cut at the budget, and when. */
  private readonly slow = new Map<string, number>();
  /** Ends the threads once no check came for HELPER_IDLE_MS (B10). */
  private readonly idleRelease = new IdleRelease(() => {
    if (this.queues.size > 0 || this.slots.some((slot) => slot.running)) return false;
    for (const slot of this.slots.splice(0)) void slot.worker.terminate().catch(() => {});
    return true;
  });

  /** True when `pattern` matches in `text`; 'timeout' when it ran out of time. `owner` is the session asking. */
  test(pattern: string, text: string, owner: string): Promise<boolean | 'timeout'> {
    return new Promise((resolve) => {
      const pending = { check: { id: ++this.nextId, pattern, text }, owner, resolve };
      const queue = this.queues.get(owner);
      if (queue) queue.push(pending);
      else this.queues.set(owner, [pending]);
      this.pump();
    });
  }

  /** Ends the threads (at shutdown). */
  async close(): Promise<void> {
    this.idleRelease.cancel();
    const slots = this.slots.splice(0);
    for (const slot of slots) {
      const running = slot.running;
      slot.running = undefined;
      clearTimeout(running?.timer);
      running?.resolve('timeout');
    }
    for (const queue of this.queues.values()) for (const pending of queue) pending.resolve('timeout');
    this.queues.clear();
    await Promise.all(slots.map((slot) => slot.worker.terminate()));
  }

  /** Starts what can start: a check of each session in turn, on a free thread, one per session. */
  private pump(): void {
    for (;;) {
      const running = new Set(this.slots.map((slot) => slot.running?.owner));
      const idle = this.slots.filter((slot) => !slot.running).sort((a, b) => Number(b.online) - Number(a.online));
      const canStart = this.slots.length < PATTERN_THREADS;
      const placeFor = (owner: string): Slot | 'new' | undefined => {
        // A slow session leaves the last free thread to the others.
        if (this.isSlow(owner)) return idle.length > 1 ? idle[0] : canStart ? 'new' : undefined;
        return idle[0] ?? (canStart ? 'new' : undefined);
      };
      let chosen: { pending: Pending; place: Slot | 'new' } | undefined;
      for (const [owner, queue] of this.queues) {
        if (running.has(owner)) continue;
        const place = placeFor(owner);
        if (!place) continue;
        // Served: the session goes to the end of the turn.
        chosen = { pending: queue.shift()!, place };
        this.queues.delete(owner);
        if (queue.length > 0) this.queues.set(owner, queue);
        break;
      }
      if (!chosen) break;
      this.run(chosen.place === 'new' ? this.thread() : chosen.place, chosen.pending);
    }
    if (this.queues.size === 0 && !this.slots.some((slot) => slot.running)) this.idleRelease.idle();
    else this.idleRelease.cancel();
  }

  private isSlow(owner: string): boolean {
    const at = this.slow.get(owner);
    if (at === undefined) return false;
    if (Date.now() - at < SLOW_MEMORY_MS) return true;
    this.slow.delete(owner);
    return false;
  }

  /** A check of `owner` was cut at the budget: it counts as slow, and a spare thread is started for the others. */
  private cut(owner: string): void {
    const now = Date.now();
    for (const [other, at] of this.slow) if (now - at >= SLOW_MEMORY_MS) this.slow.delete(other);
    this.slow.set(owner, now);
    this.pump();
    if (this.slots.length < PATTERN_THREADS && !this.slots.some((slot) => !slot.running)) this.thread();
  }

  private run(slot: Slot, next: Pending): void {
    // The budget is the pattern's: a fresh thread's start-up (tens of ms) does not count.
    const arm = () =>
      setTimeout(() => {
        // Stalled in the pattern: only ending the thread stops it.
        this.drop(slot);
        void slot.worker.terminate().catch(() => {});
        next.resolve('timeout');
        this.cut(next.owner);
      }, CHECK_BUDGET_MS);
    const running = { ...next, timer: undefined as NodeJS.Timeout | undefined };
    slot.running = running;
    if (slot.online) running.timer = arm();
    else
      slot.worker.once('online', () => {
        if (slot.running === running) running.timer = arm();
      });
    slot.worker.postMessage(next.check);
  }

  private drop(slot: Slot): void {
    clearTimeout(slot.running?.timer);
    slot.running = undefined;
    this.slots = this.slots.filter((other) => other !== slot);
  }

  private thread(): Slot {
    const worker = new Worker(new URL('./regex-worker.js', import.meta.url));
    const slot: Slot = { worker, online: false, running: undefined };
    worker.once('online', () => (slot.online = true));
    // Idle, the thread keeps no process alive.
    worker.unref();
    worker.on('message', (answer: RegexAnswer) => {
      const running = slot.running;
      if (!running || running.check.id !== answer.id) return;
      clearTimeout(running.timer);
      slot.running = undefined;
      running.resolve(answer.matched);
      this.pump();
    });
    worker.on('error', () => {
      const running = slot.running;
      this.drop(slot);
      running?.resolve(false);
      this.pump();
    });
    this.slots.push(slot);
    return slot;
  }
}
