/** `session/open`, `session/update` and `session/close`. */
import { ExecdError } from '../../protocol/errors.js';
import { SessionClose, SessionOpen, SessionUpdate } from '../../protocol/methods.js';
import type { Config } from '../../protocol/config.js';
import type { SessionUpdateResult } from '../../protocol/types.js';
import { handler } from '../net/handler.js';
import { jobsForSessionOpen } from '../jobs/announce.js';
import { openFacts, updateFacts } from '../session-facts.js';
import { closeSession } from '../session-lifecycle.js';
import type { Session } from '../sessions.js';

/** What `session/update` answers: the facts as they now stand, env values left out. */
function factsOf(session: Session): SessionUpdateResult {
  const { mode, workspaceRoot, escalationTargets, network } = session.sandbox;
  return {
    sessionId: session.id,
    cwd: session.cwd,
    envNames: Object.keys(session.env ?? {}).sort(),
    sandbox: {
      mode,
      ...(mode !== 'danger-full-access' && { workspaceRoot }),
      ...(network === 'off' && { network }),
      escalationTargets,
    },
  };
}

/** The working directory of a session created without one: `config.cwd`, else the daemon's. */
function defaultCwd(config: Config): string {
  return config.cwd ?? process.cwd();
}

/** Handlers of the session methods. */
export const sessionHandlers = [
  handler(SessionOpen, (params, { daemon, conn }) => {
    const config = daemon.config.get();
    // `create` without facts: an existing session is attached as it is, a missing one gets the
    // daemon's own working directory (a remote client's cwd means nothing here).
    const cwd =
      params.cwd ?? (params.create && !daemon.sessions.get(params.sessionId) ? defaultCwd(config) : undefined);
    const facts =
      cwd === undefined
        ? undefined
        : openFacts({ cwd, env: params.env, dshEnv: params.dshEnv, sandbox: params.sandbox }, config);
    const opened = daemon.sessions.open(params.sessionId, facts, config, conn);
    if (opened instanceof ExecdError) return opened;
    return {
      sessionId: params.sessionId,
      reattached: opened.reattached,
      jobs: jobsForSessionOpen(params.sessionId, daemon.jobs),
    };
  }),

  handler(SessionUpdate, (params, { daemon, conn }) => {
    const session = daemon.sessions.require(params.sessionId, conn);
    if (session instanceof ExecdError) return session;
    const next = updateFacts(session, params, session.id);
    if (next instanceof ExecdError) return next;
    daemon.sessions.update(session, next);
    daemon.log.info(
      { sessionId: session.id, fields: Object.keys(params).filter((key) => key !== 'sessionId') },
      'session updated',
    );
    return factsOf(session);
  }),

  handler(SessionClose, async (params, { daemon, conn }) => {
    const session = daemon.sessions.require(params.sessionId, conn);
    if (session instanceof ExecdError) return session;
    return closeSession(daemon, session.id);
  }),
];
