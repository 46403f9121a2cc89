/**
 * `fs/watch` (docs/files.md). The watcher is chokidar: on Linux it rides `fs.watch` (inotify) but adds
 * what raw `fs.watch` lacks — recursive watching on Linux (Node's own `recursive` is a userland
 * walk there), new subdirectories picked up as they appear, rename pairs sorted into
 * add/unlink, and one event model on every platform. Its initial scan is skipped
 * (`ignoreInitial`), symlinks are not followed, and hidden trees are ignored.
 *
 * Events are coalesced per path for `FS_WATCH_COALESCE_MS`, then sent as one `fs/changed`; a watch
 * holds at most `MAX_FS_WATCH_QUEUE` paths between flushes, and past that drops them for one
 * `{ kind: 'overflow' }` event.
 */
import { join, relative } from 'node:path';
import { watch as chokidarWatch, type FSWatcher } from 'chokidar';
import {
  FS_WATCH_COALESCE_MS,
  FsChanged,
  MAX_FS_WATCH_QUEUE,
  type FsChangeEvent,
  type FsChangedParams,
} from '../../protocol/fs.js';
import type { NotificationType } from 'vscode-jsonrpc';
import { isHidden, type FsPolicy } from './policy.js';

/** Where a watch's notifications go. */
export interface WatchSink {
  readonly id: number;
  notify<P>(type: NotificationType<P>, params: P): boolean;
}

interface Watch {
  id: string;
  sessionId: string;
  sink: WatchSink;
  /** Directories counted for it when it was set up (1 for a watch that is not recursive). */
  dirs: number;
  watcher: FSWatcher;
  pending: Map<string, FsChangeEvent['kind']>;
  overflowed: boolean;
  timer?: NodeJS.Timeout;
}

const KIND = {
  add: 'created',
  addDir: 'created',
  change: 'modified',
  unlink: 'removed',
  unlinkDir: 'removed',
} as const;

/** Every watch of one daemon. */
export class WatchTable {
  private readonly watches = new Map<string, Watch>();
  private counter = 0;

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
   * once the watcher is ready, so every change after the answer is seen.
   */
  async add(
    sessionId: string,
    sink: WatchSink,
    policy: FsPolicy,
    target: { real: string; shown: string; recursive: boolean; dirs: number },
  ): Promise<string> {
    const id = `watch-${++this.counter}`;
    const watcher = chokidarWatch(target.real, {
      ignoreInitial: true,
      followSymlinks: false,
      depth: target.recursive ? undefined : 0,
      ignored: (path: string) => isHidden(policy, path),
    });
    const watch: Watch = { id, sessionId, sink, dirs: target.dirs, watcher, pending: new Map(), overflowed: false };
    this.watches.set(id, watch);
    watcher.on('all', (event, path) => {
      if (!(event in KIND)) return;
      const kind = KIND[event as keyof typeof KIND];
      this.queue(watch, join(target.shown, relative(target.real, path)), kind);
    });
    // A watcher error (a vanished directory, no inotify watches left) is reported as overflow: look again.
    watcher.on('error', () => this.overflow(watch));
    await new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
    return id;
  }

  private queue(watch: Watch, path: string, kind: FsChangeEvent['kind']): void {
    if (watch.overflowed) return;
    const before = watch.pending.get(path);
    // created then modified stays created; created then removed cancels out.
    if (before === 'created' && kind === 'removed') watch.pending.delete(path);
    else if (!(before === 'created' && kind === 'modified')) watch.pending.set(path, kind);
    if (watch.pending.size > MAX_FS_WATCH_QUEUE) return this.overflow(watch);
    this.schedule(watch);
  }

  private overflow(watch: Watch): void {
    watch.pending.clear();
    watch.overflowed = true;
    this.schedule(watch);
  }

  private schedule(watch: Watch): void {
    if (watch.timer) return;
    watch.timer = setTimeout(() => this.flush(watch), FS_WATCH_COALESCE_MS);
    watch.timer.unref();
  }

  private flush(watch: Watch): void {
    watch.timer = undefined;
    const events: FsChangeEvent[] = watch.overflowed
      ? [{ kind: 'overflow' }]
      : [...watch.pending].sort(([a], [b]) => (a < b ? -1 : 1)).map(([path, kind]) => ({ path, kind }));
    watch.pending.clear();
    watch.overflowed = false;
    if (events.length === 0 || !this.watches.has(watch.id)) return;
    const params: FsChangedParams = { watchId: watch.id, events };
    watch.sink.notify(FsChanged, params);
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

  private async end(watch: Watch): Promise<void> {
    this.watches.delete(watch.id);
    clearTimeout(watch.timer);
    watch.timer = undefined;
    await watch.watcher.close();
  }

  /** Watches alive (for tests and status). */
  get size(): number {
    return this.watches.size;
  }
}
