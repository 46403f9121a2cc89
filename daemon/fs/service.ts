/**
 * The file subsystem of one daemon: its open transfers and watches, and their release when the
 * connection or session that owns them ends. Created on first use, so a daemon that never serves
 * a file method holds nothing.
 */
import type { DaemonContext } from '../context.js';
import { TransferTable } from './transfers.js';
import { ListSnapshots } from './list-snapshots.js';
import { removeAbandonedUploads } from './upload-journal.js';
import { WatchTable } from './watches.js';

/** Transfers and watches of one daemon. */
export interface FsService {
  transfers: TransferTable;
  watches: WatchTable;
  /** What paged `fs/list` listings keep between their pages. */
  listings: ListSnapshots;
  /** Connections whose close already releases their transfers and watches. */
  tracked: WeakSet<object>;
}

const services = new WeakMap<DaemonContext, FsService>();

/** The daemon's file subsystem. */
export function fsServiceOf(daemon: DaemonContext): FsService {
  let service = services.get(daemon);
  if (!service) {
    service = {
      transfers: new TransferTable(
        daemon.paths.fsUploads,
        () => daemon.config.get(),
        (direction, bytes) => daemon.observer.fsBytes(direction, bytes),
      ),
      watches: new WatchTable(),
      listings: new ListSnapshots(),
      tracked: new WeakSet(),
    };
    services.set(daemon, service);
  }
  return service;
}

/** Ends everything of a closing connection: its transfers (temp files removed) and its watches. */
export function trackConnection(
  daemon: DaemonContext,
  conn: { id: number; onClose(listener: () => void): void },
): void {
  const service = fsServiceOf(daemon);
  if (service.tracked.has(conn)) return;
  service.tracked.add(conn);
  conn.onClose(() => {
    void service.transfers.releaseWhere((owner) => owner.connId === conn.id).catch(() => {});
    void service.watches.removeWhere((watch) => watch.sinkId === conn.id).catch(() => {});
  });
}

/** Ends every transfer and watch of a session that closes, and drops its listings' kept names. */
export async function releaseSessionFiles(daemon: DaemonContext, sessionId: string): Promise<void> {
  const service = services.get(daemon);
  if (!service) return;
  service.listings.forgetSession(sessionId);
  await Promise.all([
    service.transfers.releaseWhere((owner) => owner.sessionId === sessionId),
    service.watches.removeWhere((watch) => watch.sessionId === sessionId),
  ]);
}

/** Ends every transfer and watch, and drops every listing's kept names (shutdown). */
export async function releaseAllFiles(daemon: DaemonContext): Promise<void> {
  const service = services.get(daemon);
  if (!service) return;
  service.listings.clear();
  await Promise.all([service.transfers.releaseWhere(() => true), service.watches.removeWhere(() => true)]);
}

/** At start: removes the temp files of uploads an earlier daemon left unfinished. */
export function sweepAbandonedUploads(daemon: DaemonContext): Promise<number> {
  return removeAbandonedUploads(daemon.paths.fsUploads);
}
