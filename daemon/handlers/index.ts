/** Every request handler, registered from this one list. */
import type { HandlerEntry } from '../handler.js';
import { configHandlers } from './config.js';
import { daemonHandlers } from './daemon.js';
import { initializeHandlers } from './initialize.js';
import { jobHandlers } from './job.js';
import { sessionHandlers } from './session.js';
import { shellHandlers } from './shell.js';
import { terminalHandlers } from './terminal.js';

/** All handlers; a method without one here is answered MethodNotFound. */
export const HANDLERS: readonly HandlerEntry[] = [
  ...initializeHandlers,
  ...sessionHandlers,
  ...shellHandlers,
  ...terminalHandlers,
  ...jobHandlers,
  ...configHandlers,
  ...daemonHandlers,
];
