/**
 * Where a handler starts watching a command: the connection's peer and client name joined to the
 * command's facts. With nothing observing, nothing is built (`NO_WATCH` at once).
 */
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import type { SandboxMode } from '../../protocol/sandbox.js';
import type { ExecSpec } from '../../protocol/types.js';
import type { HandlerContext } from '../net/handler.js';
import { NO_WATCH, type CommandKind, type CommandWatch, type PeerIdentity } from './observer.js';

/** `CN=agent-7,O=ci` from a certificate subject's fields; undefined when there is none. */
function subjectText(subject: Record<string, string | string[]> | undefined): string | undefined {
  if (!subject) return undefined;
  const parts = Object.entries(subject).flatMap(([key, value]) =>
    (Array.isArray(value) ? value : [value]).map((one) => `${key}=${one}`),
  );
  return parts.length > 0 ? parts.join(',') : undefined;
}

/**
 * What the transport says of a connection's peer. A Unix socket peer is not named: Node does not
 * read `SO_PEERCRED`, and the socket (0600 in a 0700 directory) admits only the daemon's own uid
 * and root; a network peer is its address, and over TLS its client certificate's subject.
 */
export function peerOf(socket: Socket): PeerIdentity {
  if (socket.remoteAddress === undefined) return { transport: 'unix' };
  const host = socket.remoteAddress.includes(':') ? `[${socket.remoteAddress}]` : socket.remoteAddress;
  const address = `${host}:${socket.remotePort}`;
  if (!(socket instanceof TLSSocket)) return { transport: 'tcp', address };
  // `{}` when the peer presented no certificate: no subject.
  const certificate = socket.getPeerCertificate() as { subject?: Record<string, string> };
  const certSubject = subjectText(certificate.subject);
  return { transport: 'tls', address, ...(certSubject !== undefined && { certSubject }) };
}

/** The facts of a command a handler knows. */
export interface CommandFacts {
  kind: CommandKind;
  mode: SandboxMode;
  sessionId: string;
  cwd: string;
  command: string;
  requestKey?: string;
}

/** Starts watching a command for `ctx`'s connection (the one its keyed run is attached to now). */
export function observedCommand(ctx: HandlerContext, facts: CommandFacts): CommandWatch {
  const observer = ctx.daemon.observer;
  if (!observer.active) return NO_WATCH;
  const conn = ctx.conn;
  return observer.command({
    ...facts,
    ...(conn.clientName !== undefined && { clientName: conn.clientName }),
    peer: peerOf(conn.socket),
  });
}

/** The facts of a resolved spec's command (`shell/run`, `shell/start`). */
export function specFacts(
  kind: CommandKind,
  spec: ExecSpec,
  params: { sessionId: string; requestKey?: string },
): CommandFacts {
  return {
    kind,
    mode: spec.sandboxPolicy.mode,
    sessionId: params.sessionId,
    cwd: spec.workdir,
    command: spec.command,
    ...(params.requestKey !== undefined && { requestKey: params.requestKey }),
  };
}
