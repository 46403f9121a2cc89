/**
 * Sessions belong to the daemon, not to a connection (docs/sessions.md): a harness that restarts opens
 * its session again and finds its jobs. A connection may use a session only after opening it.
 */
import type { NotificationType } from 'vscode-jsonrpc';
import type { Config } from '../../protocol/config.js';
import { ExecdError } from '../../protocol/errors.js';
import { differingFacts, reopenRefusal, type SessionFacts } from './session-facts.js';

/** One agent session and its facts. */
export interface Session extends SessionFacts {
  id: string;
  /**
   * The daemon's configuration when the session was opened: its defaults hold for the session's
   * whole life, and a later `config/set` may narrow its limits but never widen them. Read it
   * through `configFor` (bound-config.ts), which applies that rule.
   */
  config: Config;
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

/** The daemon's session table. */
export class SessionTable {
  private readonly sessions = new Map<string, Session>();

  /** Every session. */
  all(): Session[] {
    return [...this.sessions.values()];
  }

  /**
   * Opens a session on a holder (the re-open rule of docs/sessions.md): without facts it attaches to an existing
   * session (SESSION_NOT_FOUND when there is none); with facts it creates the session, or attaches
   * when they equal the session's, and is FORBIDDEN, naming what differs, when they do not.
   */
  open(
    sessionId: string,
    facts: SessionFacts | undefined,
    config: Config,
    holder: SessionHolder,
  ): { session: Session; reattached: boolean } | ExecdError {
    const existing = this.sessions.get(sessionId);
    if (existing) {
      const differing = facts ? differingFacts(existing, facts) : [];
      if (differing.length > 0) return reopenRefusal(sessionId, differing);
      this.hold(existing, holder);
      return { session: existing, reattached: true };
    }
    if (!facts) {
      return new ExecdError(
        'SESSION_NOT_FOUND',
        `session ${sessionId} does not exist: open it with a cwd (and its other facts) to create it`,
      );
    }
    if (this.sessions.size >= config.maxSessions) {
      return new ExecdError('LIMIT_EXCEEDED', `maxSessions limit reached (${config.maxSessions})`);
    }
    const session: Session = {
      ...facts,
      id: sessionId,
      config,
      connections: new Set<SessionHolder>(),
      lastActiveAt: Date.now(),
      reportedOutputs: new Set<string>(),
    };
    this.sessions.set(sessionId, session);
    this.hold(session, holder);
    return { session, reattached: false };
  }

  private hold(session: Session, holder: SessionHolder): void {
    session.lastActiveAt = Date.now();
    session.connections.add(holder);
    holder.openSessions.add(session.id);
  }

  /** Replaces a session's facts (already checked by `updateFacts`). */
  update(session: Session, facts: SessionFacts): void {
    Object.assign(session, facts, { lastActiveAt: Date.now() });
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
