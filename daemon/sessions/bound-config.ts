/**
 * Which configuration a call of a session is bound by: the session's snapshot, taken when it was
 * opened, narrowed by the live configuration (`boundConfig`). Every per-session and per-command
 * limit a handler applies is read here, so a lowered limit reaches every open session at once and
 * a raised one only sessions opened afterwards.
 */
import { boundConfig, type Config } from '../../protocol/config.js';
import type { DaemonContext } from '../context.js';
import type { Session } from './sessions.js';

/**
 * The configuration `session`'s calls are bound by (a session or its id); the live configuration
 * when no such session is open (a job restored after its session closed, say).
 */
export function configFor(daemon: Pick<DaemonContext, 'config' | 'sessions'>, session: Session | string): Config {
  const live = daemon.config.get();
  const open = typeof session === 'string' ? daemon.sessions.get(session) : session;
  return open ? boundConfig(open.config, live) : live;
}
