/** `session/open` and `session/close`. */
import { ExecdError } from '../../protocol/errors.js';
import { SessionClose, SessionOpen } from '../../protocol/methods.js';
import { handler } from '../net/handler.js';
import { jobsForSessionOpen } from '../jobs/announce.js';
import { closeSession } from '../session-lifecycle.js';

/** Handlers of the session methods. */
export const sessionHandlers = [
  handler(SessionOpen, (params, { daemon, conn }) => {
    const opened = daemon.sessions.open(
      { id: params.sessionId, cwd: params.cwd, env: params.env, dshEnv: params.dshEnv, sandbox: params.sandbox },
      conn,
      daemon.config.get().maxSessions,
    );
    if (opened instanceof ExecdError) return opened;
    return {
      sessionId: params.sessionId,
      reattached: opened.reattached,
      jobs: jobsForSessionOpen(params.sessionId, daemon.jobs),
    };
  }),

  handler(SessionClose, async (params, { daemon, conn }) => {
    const session = daemon.sessions.require(params.sessionId, conn);
    if (session instanceof ExecdError) return session;
    return closeSession(daemon, session.id);
  }),
];
