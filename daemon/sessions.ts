/**
 * Sessions belong to the daemon, not to a connection (SPEC §1.7): a harness that restarts opens
 * its session again and finds its jobs. A connection may use a session only after opening it.
 */
import type { NotificationType } from 'vscode-jsonrpc';
import { ExecdError } from '../protocol/errors.js';
import type { SandboxPolicy } from '../protocol/sandbox.js';
import type { EnvMap } from './env.js';

/** One agent session and its facts. */
export interface Session {
  id: string;
  cwd: string;
  env?: EnvMap;
  dshEnv?: EnvMap;
  sandbox?: SandboxPolicy;
  /** Connections that currently have this session open. */
  connections: Set<SessionHolder>;
  /** Last time (ms since the epoch) it was opened, used by a request, or left by a connection. */
  lastActiveAt: number;
  /** Spill files of foreground runs reported to this session (and log files of its released jobs): what `output/read` may open. */
  reportedOutputs: Set<string>;
}

/** Anything that can hold sessions open: a client connection. */
export interface SessionHolder {
  readonly openSessions: Set<string>;
  /** Sends a notification; false when the holder can no longer receive one. */
  notify<P>(type: NotificationType<P>, params: P): boolean;
}

/** The facts a `session/open` brings. */
export type SessionFactsInput = Omit<Session, 'connections' | 'lastActiveAt' | 'reportedOutputs'>;

/** The daemon's session table. */
export class SessionTable {
  private readonly sessions = new Map<string, Session>();

  /** Every session. */
  all(): Session[] {
    return [...this.sessions.values()];
  }

  /** Opens a session on a holder, or reattaches to it with the latest facts. */
  open(
    facts: SessionFactsInput,
    holder: SessionHolder,
    maxSessions: number,
  ): { session: Session; reattached: boolean } | ExecdError {
    const existing = this.sessions.get(facts.id);
    if (!existing && this.sessions.size >= maxSessions) {
      return new ExecdError('LIMIT_EXCEEDED', `maxSessions limit reached (${maxSessions})`);
    }
    const fresh = { connections: new Set<SessionHolder>(), reportedOutputs: new Set<string>() };
    const session: Session = Object.assign(existing ?? fresh, facts, { lastActiveAt: Date.now() });
    this.sessions.set(facts.id, session);
    session.connections.add(holder);
    holder.openSessions.add(facts.id);
    return { session, reattached: existing !== undefined };
  }

  /** The session, if this holder opened it; else SESSION_NOT_FOUND. */
  require(sessionId: string, holder: SessionHolder): Session | ExecdError {
    const session = this.sessions.get(sessionId);
    if (!session || !holder.openSessions.has(sessionId)) {
      return new ExecdError('SESSION_NOT_FOUND', `session ${sessionId} is not open on this connection`);
    }
    session.lastActiveAt = Date.now();
    return session;
  }

  /** The session with this id, open on any connection or none. */
  get(sessionId: string): Session | undefined {
    return this.sessions.get(sessionId);
  }

  /** The holders that have a session open now (none when it is not open anywhere). */
  holdersOf(sessionId: string): SessionHolder[] {
    return [...(this.sessions.get(sessionId)?.connections ?? [])];
  }

  /** Forgets a session and detaches every holder from it. */
  remove(sessionId: string): void {
    const session = this.sessions.get(sessionId);
    if (!session) return;
    for (const holder of session.connections) holder.openSessions.delete(sessionId);
    this.sessions.delete(sessionId);
  }

  /** Detaches a holder that went away; the sessions themselves live on. */
  detach(holder: SessionHolder): void {
    const now = Date.now();
    for (const id of holder.openSessions) {
      const session = this.sessions.get(id);
      if (!session) continue;
      session.connections.delete(holder);
      session.lastActiveAt = now;
    }
    holder.openSessions.clear();
  }
}
