/**
 * The daemon's one entry, for the CLI's `serve`: the `--listen` and TLS checks and the idle-exit
 * watch are light and load with it; the server and its logger (zod, every handler and subsystem)
 * load through `loadDaemon()`, only when a daemon really starts in this process.
 */
import type { createLogger } from './logger.js';
import type { startDaemon } from './server.js';

export { checkTlsFiles, parseListenUrl, type ListenSpec, type TlsFiles } from './net/listeners.js';
export { daemonIsIdle, watchIdle } from './idle-exit.js';

/** What starting a daemon in this process takes. */
export interface DaemonModules {
  createLogger: typeof createLogger;
  startDaemon: typeof startDaemon;
}

/** Loads the server and its logger. */
export async function loadDaemon(): Promise<DaemonModules> {
  const [logger, server] = await Promise.all([import('./logger.js'), import('./server.js')]);
  return { createLogger: logger.createLogger, startDaemon: server.startDaemon };
}
