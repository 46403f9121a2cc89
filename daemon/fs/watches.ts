/**
 * `fs/watch` (docs/files.md). The table of watches lives on the daemon's thread (budgets, owners,
 * where notifications go); the watchers themselves live on one worker thread (`watch-worker.ts`),
 * so setting up or tearing down a watch of ten thousand directories never stalls another
 * session's calls. The thread starts with the first watch and ends once none is left for
 * HELPER_IDLE_MS.
 *
 * Events are coalesced per path for `FS_WATCH_COALESCE_MS` on that thread, then sent as one
 * `fs/changed`; a watch holds at most `MAX_FS_WATCH_QUEUE` paths between flushes, and past that
 * drops them for one `{ kind: 'overflow' }` event.
 *
 * Should the thread end unexpectedly, every watch is set up again on a fresh one and told
 * `overflow` (changes may have been missed); past `MAX_RESTARTS` such ends within
 * `RESTART_WINDOW_MS`, the watches end instead, each told `overflow` one last time.
 */
import { Worker } from 'node:worker_threads';
import type { NotificationType } from 'vscode-jsonrpc';
import { ExecdError } from '../../protocol/errors.js';
import { FS_WATCH_COALESCE_MS, FsChanged, MAX_FS_WATCH_QUEUE, type FsChangedParams } from '../../protocol/fs.js';
import { IdleRelease } from '../host/idle-release.js';
import type { FsPolicy } from './policy.js';
import type { WatchReport, WatchRequest, WatchWorkerData } from './watch-worker.js';

/** Where a watch's notifications go. */
export interface WatchSink {
  readonly id: number;
  notify<P>(type: NotificationType<P>, params: P): boolean;
}

/** Unexpected ends of the watcher thread tolerated within `RESTART_WINDOW_MS`. */
const MAX_RESTARTS = 3;
const RESTART_WINDOW_MS = 60_000;

interface Watch {
  id: string;
  sessionId: string;
  sink: WatchSink;
  /** Directories counted for it when it was set up (1 for a watch that is not recursive). */
  dirs: number;
  request: Extract<WatchRequest, { type: 'add' }>;
  /** Set once the watcher reported ready. */
  ready: boolean;
}

/** Every watch of one daemon. */
export class WatchTable {
  private readonly watches = new Map<string, Watch>();
  private counter = 0;
  private worker: Worker | undefined;
  /** Adds waiting for their watcher's ready, by watch id. */
  private readonly settingUp = new Map<string, (failed?: ExecdError) => void>();
  /** Closes waiting for the thread's answer, by watch id. */
  private readonly closing = new Map<string, () => void>();
  private restarts: number[] = [];
  private readonly idleRelease = new IdleRelease(() => {
    const worker = this.worker;
    if (!worker || this.watches.size > 0 || this.closing.size > 0) return false;
    this.worker = undefined;
    void worker.terminate().catch(() => {});
    return true;
  });

  /** Watches of one session. */
  countOf(sessionId: string): number {
    return [...this.watches.values()].filter((watch) => watch.sessionId === sessionId).length;
  }

  /** Directories watched by one session's watches (as counted when each was set up). */
  dirsOf(sessionId: string): number {
    let sum = 0;
    for (const watch of this.watches.values()) if (watch.sessionId === sessionId) sum += watch.dirs;
    return sum;
  }

  /** Directories watched by every watch of the daemon. */
  get dirsTotal(): number {
    let sum = 0;
    for (const watch of this.watches.values()) sum += watch.dirs;
    return sum;
  }

  /**
   * Starts a watch of the real path `real`, reported under the path the client named; resolves
   * once the watcher is ready, so every change after the answer is seen. The watch enters the
   * table before the first await (the budgets count it at once).
   */
  async add(
    sessionId: string,
    sink: WatchSink,
    policy: FsPolicy,
    target: { real: string; shown: string; recursive: boolean; dirs: number },
  ): Promise<string | ExecdError> {
    const id = `watch-${++this.counter}`;
    const request: WatchRequest = {
      type: 'add',
      id,
      real: target.real,
      shown: target.shown,
      recursive: target.recursive,
      policy: {
        mode: policy.mode,
        workspaceRoot: policy.workspaceRoot,
        hidden: policy.hidden.map((tree) => ({ ...tree })),
      },
    };
    this.watches.set(id, { id, sessionId, sink, dirs: target.dirs, request, ready: false });
    const ready = new Promise<ExecdError | undefined>((resolve) => this.settingUp.set(id, resolve));
    this.thread().postMessage(request);
    const failed = await ready;
    return failed ?? id;
  }

  /** Ends a watch of this session; false when there is none. */
  async remove(watchId: string, sessionId: string, sinkId?: number): Promise<boolean> {
    const watch = this.watches.get(watchId);
    if (!watch || watch.sessionId !== sessionId || (sinkId !== undefined && watch.sink.id !== sinkId)) return false;
    await this.end(watch);
    return true;
  }

  /** Ends every watch `matches` selects. */
  async removeWhere(matches: (watch: { sessionId: string; sinkId: number }) => boolean): Promise<void> {
    const ending = [...this.watches.values()].filter((watch) =>
      matches({ sessionId: watch.sessionId, sinkId: watch.sink.id }),
    );
    await Promise.all(ending.map((watch) => this.end(watch)));
  }

  /** Watches alive (for tests and status). */
  get size(): number {
    return this.watches.size;
  }

  private async end(watch: Watch): Promise<void> {
    this.watches.delete(watch.id);
    // An add still waiting answers now; its watch is already gone.
    this.settingUp.get(watch.id)?.();
    this.settingUp.delete(watch.id);
    const worker = this.worker;
    if (worker) {
      await new Promise<void>((resolve) => {
        this.closing.set(watch.id, resolve);
        worker.postMessage({ type: 'close', id: watch.id } satisfies WatchRequest);
      });
    }
    if (this.watches.size === 0 && this.closing.size === 0) this.idleRelease.idle();
  }

  private thread(): Worker {
    this.idleRelease.cancel();
    if (this.worker) return this.worker;
    const workerData: WatchWorkerData = { coalesceMs: FS_WATCH_COALESCE_MS, maxQueue: MAX_FS_WATCH_QUEUE };
    const worker = new Worker(new URL('./watch-worker.js', import.meta.url), { workerData });
    // Watches keep no process alive; the daemon's own handles do.
    worker.unref();
    worker.on('message', (report: WatchReport) => this.received(report));
    // An error ends the thread; 'exit' follows and handles it.
    worker.on('error', () => {});
    worker.on('exit', () => {
      if (this.worker === worker) this.threadEnded();
    });
    this.worker = worker;
    return worker;
  }

  private received(report: WatchReport): void {
    if (report.type === 'closed') {
      this.closing.get(report.id)?.();
      this.closing.delete(report.id);
      return;
    }
    const watch = this.watches.get(report.id);
    if (!watch) return;
    if (report.type === 'ready') {
      watch.ready = true;
      this.settingUp.get(report.id)?.();
      this.settingUp.delete(report.id);
      return;
    }
    const params: FsChangedParams = { watchId: watch.id, events: report.events };
    watch.sink.notify(FsChanged, params);
  }

  /** The thread ended without being asked: set every watch up again, or end them past the limit. */
  private threadEnded(): void {
    this.worker = undefined;
    for (const resolve of this.closing.values()) resolve();
    this.closing.clear();
    const now = Date.now();
    this.restarts = [...this.restarts.filter((at) => now - at < RESTART_WINDOW_MS), now];
    const giveUp = this.restarts.length > MAX_RESTARTS;
    const overflow = (watch: Watch) =>
      watch.sink.notify(FsChanged, { watchId: watch.id, events: [{ kind: 'overflow' }] } satisfies FsChangedParams);
    for (const watch of [...this.watches.values()]) {
      if (giveUp) {
        this.watches.delete(watch.id);
        if (watch.ready) overflow(watch);
        this.settingUp.get(watch.id)?.(
          new ExecdError('FS_DENIED', `fs/watch ${watch.request.shown} failed: the watcher thread kept ending`),
        );
        this.settingUp.delete(watch.id);
        continue;
      }
      // Changes while no thread watched were missed: a watch already answered is told to look again.
      if (watch.ready) overflow(watch);
      this.thread().postMessage(watch.request);
    }
  }
}
