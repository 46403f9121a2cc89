/** `session/open`, `session/update` and `session/close`. */
import { ExecdError } from '../../protocol/errors.js';
import { SessionClose, SessionOpen, SessionUpdate } from '../../protocol/methods.js';
import type { Config } from '../../protocol/config.js';
import type { SessionUpdateResult } from '../../protocol/types.js';
import { handler } from '../net/handler.js';
import { jobsForSessionOpen } from '../jobs/announce.js';
import { lowerLimits, openLimits } from '../limits/resolve-limits.js';
import { openFacts, updateFacts } from '../sessions/session-facts.js';
import { closeSession } from '../sessions/session-lifecycle.js';
import type { Session } from '../sessions/sessions.js';

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
    ...(session.limits && { limits: session.limits }),
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
    const { scopes } = daemon.processes;
    const limits = cwd === undefined ? undefined : openLimits(params.limits, config, scopes.limitsCapability);
    if (limits instanceof ExecdError) return limits;
    const facts =
      cwd === undefined
        ? undefined
        : openFacts({ cwd, env: params.env, dshEnv: params.dshEnv, sandbox: params.sandbox, limits }, config);
    const opened = daemon.sessions.open(params.sessionId, facts, config, conn);
    if (opened instanceof ExecdError) return opened;
    if (!opened.reattached && opened.session.limits) {
      // A session total that cannot be written fails the open: its commands must not run unlimited.
      const refused = scopes.applySessionLimits(params.sessionId, opened.session.limits);
      if (refused) {
        daemon.sessions.remove(params.sessionId);
        scopes.forgetSession(params.sessionId);
        return refused;
      }
    }
    return {
      sessionId: params.sessionId,
      reattached: opened.reattached,
      jobs: jobsForSessionOpen(params.sessionId, daemon.jobs),
    };
  }),

  handler(SessionUpdate, (params, { daemon, conn }) => {
    const session = daemon.sessions.require(params.sessionId, conn);
    if (session instanceof ExecdError) return session;
    const { scopes } = daemon.processes;
    const limits =
      params.limits === undefined
        ? session.limits
        : lowerLimits(session.limits, params.limits, session.config, scopes.limitsCapability, session.id);
    if (limits instanceof ExecdError) return limits;
    const next = updateFacts(session, { ...params, limits }, session.id);
    if (next instanceof ExecdError) return next;
    if (limits?.sessionMemoryBytes !== session.limits?.sessionMemoryBytes) {
      const refused = scopes.applySessionLimits(session.id, limits);
      if (refused) return refused;
    }
    daemon.sessions.update(session, next);
    // A narrowed sandbox is a new policy: the helpers of the old one take no new command.
    if (params.sandbox !== undefined) daemon.confinedSpawners.retire(session.id);
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
