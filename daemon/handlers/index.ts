/** Every request handler, registered from this one list. */
import type { HandlerEntry } from '../net/handler.js';
import { configHandlers } from './config.js';
import { daemonHandlers } from './daemon.js';
import { fsHandlers } from './fs.js';
import { initializeHandlers } from './initialize.js';
import { renderHandlers } from './render.js';
import { jobHandlers } from './job.js';
import { outputHandlers } from './output.js';
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
  ...outputHandlers,
  ...fsHandlers,
  ...configHandlers,
  ...daemonHandlers,
  ...renderHandlers,
];
