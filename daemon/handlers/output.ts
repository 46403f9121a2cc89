/** `output/read`: pages of the spill and log files reported to a session (docs/jobs.md). */
import { ExecdError } from '../../protocol/errors.js';
import { MAX_PAGE_BYTES, OutputRead } from '../../protocol/methods.js';
import { handler } from '../net/handler.js';
import { MIN_PAGE_BYTES } from '../jobs/stream-read.js';
import { readOutput } from '../state/output-files.js';

/** Handlers of the output methods. */
export const outputHandlers = [
  handler(OutputRead, (params, { daemon, conn }) => {
    const session = daemon.sessions.require(params.sessionId, conn);
    if (session instanceof ExecdError) return session;
    const maxBytes = Math.max(params.maxBytes ?? MAX_PAGE_BYTES, MIN_PAGE_BYTES);
    return readOutput(daemon, { ...params, maxBytes });
  }),
];
