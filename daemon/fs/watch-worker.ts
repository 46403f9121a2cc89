/**
 * The thread every `fs/watch` watcher lives on (docs/files.md#watch). Setting up a recursive
 * watcher walks the tree and adds one inotify watch per directory, synchronously in places; on a
 * tree of 10 000 directories that is seconds of work, which here stalls this thread instead of the
 * daemon's event loop. Tearing a watcher down is the same. Events are coalesced here too, so the
 * daemon's thread receives one ready-made `fs/changed` batch per flush.
 *
 * The watcher is chokidar: on Linux it rides `fs.watch` (inotify) but adds what raw `fs.watch`
 * lacks — recursive watching on Linux (Node's own `recursive` is a userland walk there), new
 * subdirectories picked up as they appear, rename pairs sorted into add/unlink, and one event
 * model on every platform. Its initial scan is skipped (`ignoreInitial`), symlinks are not
 * followed, and hidden trees are ignored.
 */
import { join, relative } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { watch as chokidarWatch, type FSWatcher } from 'chokidar';
import type { FsChangeEvent } from '../../protocol/fs.js';
import { isHidden, type FsPolicy } from './policy.js';

/** What the daemon's thread passes when it starts this one. */
export interface WatchWorkerData {
  /** How long events are coalesced per path before a flush. */
  coalesceMs: number;
  /** Paths a watch holds between flushes before it drops them for one overflow. */
  maxQueue: number;
}

/** A request from the daemon's thread. */
export type WatchRequest =
  | { type: 'add'; id: string; real: string; shown: string; recursive: boolean; policy: FsPolicy }
  | { type: 'close'; id: string };

/** A report to the daemon's thread. */
export type WatchReport =
  | { type: 'ready'; id: string }
  | { type: 'closed'; id: string }
  | { type: 'changed'; id: string; events: FsChangeEvent[] };

interface Watch {
  id: string;
  watcher: FSWatcher;
  pending: Map<string, FsChangeEvent['kind']>;
  overflowed: boolean;
  timer?: NodeJS.Timeout;
  closed: boolean;
}

const KIND = {
  add: 'created',
  addDir: 'created',
  change: 'modified',
  unlink: 'removed',
  unlinkDir: 'removed',
} as const;

// Null where the module is merely imported (not as the watch thread): nothing here runs then.
const { coalesceMs, maxQueue } = (workerData as WatchWorkerData | null) ?? { coalesceMs: 0, maxQueue: 0 };
const watches = new Map<string, Watch>();

function post(report: WatchReport): void {
  parentPort?.postMessage(report);
}

function add(request: Extract<WatchRequest, { type: 'add' }>): void {
  const { id, real, shown, recursive, policy } = request;
  const watcher = chokidarWatch(real, {
    ignoreInitial: true,
    followSymlinks: false,
    depth: recursive ? undefined : 0,
    ignored: (path: string) => isHidden(policy, path),
  });
  const watch: Watch = { id, watcher, pending: new Map(), overflowed: false, closed: false };
  watches.set(id, watch);
  watcher.on('all', (event, path) => {
    if (!(event in KIND)) return;
    queue(watch, join(shown, relative(real, path)), KIND[event as keyof typeof KIND]);
  });
  // A watcher error (a vanished directory, no inotify watches left) is reported as overflow: look again.
  watcher.on('error', () => overflow(watch));
  watcher.once('ready', () => {
    if (!watch.closed) post({ type: 'ready', id });
  });
}

function queue(watch: Watch, path: string, kind: FsChangeEvent['kind']): void {
  if (watch.overflowed || watch.closed) return;
  const before = watch.pending.get(path);
  // created then modified stays created; created then removed cancels out.
  if (before === 'created' && kind === 'removed') watch.pending.delete(path);
  else if (!(before === 'created' && kind === 'modified')) watch.pending.set(path, kind);
  if (watch.pending.size > maxQueue) return overflow(watch);
  schedule(watch);
}

function overflow(watch: Watch): void {
  watch.pending.clear();
  watch.overflowed = true;
  schedule(watch);
}

function schedule(watch: Watch): void {
  if (watch.timer || watch.closed) return;
  watch.timer = setTimeout(() => flush(watch), coalesceMs);
}

function flush(watch: Watch): void {
  watch.timer = undefined;
  const events: FsChangeEvent[] = watch.overflowed
    ? [{ kind: 'overflow' }]
    : [...watch.pending].sort(([a], [b]) => (a < b ? -1 : 1)).map(([path, kind]) => ({ path, kind }));
  watch.pending.clear();
  watch.overflowed = false;
  if (events.length > 0 && !watch.closed) post({ type: 'changed', id: watch.id, events });
}

async function close(id: string): Promise<void> {
  const watch = watches.get(id);
  if (watch) {
    watches.delete(id);
    watch.closed = true;
    clearTimeout(watch.timer);
    await watch.watcher.close().catch(() => {});
  }
  post({ type: 'closed', id });
}

parentPort?.on('message', (request: WatchRequest) => {
  if (request.type === 'add') add(request);
  else close(request.id).catch(() => {});
});
