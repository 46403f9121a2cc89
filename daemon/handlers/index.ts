/** Every request handler, registered from this one list. */
import { KEYED_REQUESTS, ShellRun, TerminalRun } from '../../protocol/methods.js';
import type { HandlerEntry } from '../net/handler.js';
import { keyRequests } from '../request-keys/keyed-handler.js';
import { configHandlers } from './config.js';
import { daemonHandlers } from './daemon.js';
import { fsHandlers } from './fs.js';
import { initializeHandlers } from './initialize.js';
import { renderHandlers } from './render.js';
import { jobHandlers } from './job.js';
import { outputHandlers } from './output.js';
import { sessionHandlers } from './session.js';
import { shellHandlers } from './shell.js';
import { shellStreamHandlers } from './shell-stream.js';
import { terminalHandlers } from './terminal.js';

/**
 * All handlers; a method without one here is answered MethodNotFound. The keyed ones answer a
 * repeated `requestKey` from memory; the runs among them may outlive their connection.
 */
export const HANDLERS: readonly HandlerEntry[] = keyRequests(
  [
    ...initializeHandlers,
    ...sessionHandlers,
    ...shellHandlers,
    ...shellStreamHandlers,
    ...terminalHandlers,
    ...jobHandlers,
    ...outputHandlers,
    ...fsHandlers,
    ...configHandlers,
    ...daemonHandlers,
    ...renderHandlers,
  ],
  KEYED_REQUESTS,
  [ShellRun, TerminalRun],
);
