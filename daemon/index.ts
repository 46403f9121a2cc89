/**
 * The daemon's one entry, for the CLI's `serve`: the `--listen` and TLS checks and the idle-exit
 * watch are light and load with it; the server and its logger (zod, every handler and subsystem)
 * load through `loadDaemon()`, only when a daemon really starts in this process.
 */
import { keepYoungGenerationSmall } from './host/heap-footprint.js';
import { closeInheritedFds } from './host/inherited-fds.js';
import type { createLogger } from './log/logger.js';
import type { startDaemon } from './server.js';
import { handedFds, takeHandover } from './upgrade/handover.js';

export { checkTlsFiles, parseListenUrl, type ListenSpec, type TlsFiles } from './net/listeners.js';
export { daemonIsIdle, watchIdle } from './host/idle-exit.js';
export { parseMetricsUrl, type MetricsSpec } from './observability/address.js';

/** What starting a daemon in this process takes. */
export interface DaemonModules {
  createLogger: typeof createLogger;
  startDaemon: typeof startDaemon;
  /** The inherited descriptors closed before anything else loaded (see `inherited-fds.ts`). */
  closedFds: number[];
}

/** Closes what the daemon inherited, then loads the server and its logger. */
export async function loadDaemon(): Promise<DaemonModules> {
  // First: no worker, spawner or command may start while an inherited descriptor is open.
  // The listeners and pipes an upgrade in place handed over are this daemon's, not inherited strays.
  const closedFds = closeInheritedFds(handedFds(takeHandover()));
  keepYoungGenerationSmall();
  const [logger, server] = await Promise.all([import('./log/logger.js'), import('./server.js')]);
  return { createLogger: logger.createLogger, startDaemon: server.startDaemon, closedFds };
}
