/**
 * The file subsystem of one daemon: its open transfers and watches, and their release when the
 * connection or session that owns them ends. Created on first use, so a daemon that never serves
 * a file method holds nothing.
 */
import type { DaemonContext } from '../context.js';
import { TransferTable } from './transfers.js';
import { removeAbandonedUploads } from './upload-journal.js';
import { WatchTable } from './watches.js';

/** Transfers and watches of one daemon. */
export interface FsService {
  transfers: TransferTable;
  watches: WatchTable;
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

/** Ends every transfer and watch of a session that closes. */
export async function releaseSessionFiles(daemon: DaemonContext, sessionId: string): Promise<void> {
  const service = services.get(daemon);
  if (!service) return;
  await Promise.all([
    service.transfers.releaseWhere((owner) => owner.sessionId === sessionId),
    service.watches.removeWhere((watch) => watch.sessionId === sessionId),
  ]);
}

/** Ends every transfer and watch (shutdown). */
export async function releaseAllFiles(daemon: DaemonContext): Promise<void> {
  const service = services.get(daemon);
  if (!service) return;
  await Promise.all([service.transfers.releaseWhere(() => true), service.watches.removeWhere(() => true)]);
}

/** At start: removes the temp files of uploads an earlier daemon left unfinished. */
export function sweepAbandonedUploads(daemon: DaemonContext): Promise<number> {
  return removeAbandonedUploads(daemon.paths.fsUploads);
}
