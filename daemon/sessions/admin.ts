/**
 * The administrative right (docs/sessions.md): the daemon-wide methods — `config/set`,
 * `job/clean { all }`, `job/list { all }`, `terminal/list { all }`, `daemon/shutdown`, and
 * seeing other sessions in `daemon/status` — belong to whoever holds the admin token
 * (`<stateDir>/admin-token`, 0600, beside the session token). A connection that presented only
 * the session token — an agent's harness, an MCP server — works in the sessions it opens and
 * cannot change the daemon for the others.
 */
import { ExecdError } from '../../protocol/errors.js';

/** What the check reads of a connection. */
export interface AdminHolder {
  readonly admin: boolean;
}

/** Undefined for an admin connection; else FORBIDDEN naming what needs the right and how it is granted. */
export function requireAdmin(conn: AdminHolder, what: string): ExecdError | undefined {
  if (conn.admin) return undefined;
  return new ExecdError(
    'FORBIDDEN',
    `${what} needs the administrative right: initialize with adminToken (the daemon's <stateDir>/admin-token, or EXECD_ADMIN_TOKEN; the execd CLI sends it)`,
  );
}
