/**
 * The default session of an `execd mcp` server: its own, derived from its working
 * directory, so two servers in two projects never share a shell, exports or jobs, and a server
 * restarted in the same project reattaches to its jobs. Pure.
 */
import { createHash } from 'node:crypto';
import { basename } from 'node:path';

/** Longest directory name kept in a derived session id. */
const MAX_NAME_CHARS = 40;

/**
 * `mcp-<directory name>-<8 hex of the path's SHA-256>`: readable in `execd status`, distinct for
 * distinct directories of the same name, and within the session id alphabet `[A-Za-z0-9._:-]`.
 */
export function mcpSessionId(workdir: string): string {
  const name =
    basename(workdir)
      .replace(/[^A-Za-z0-9._-]+/g, '_')
      .slice(0, MAX_NAME_CHARS) || 'root';
  const hash = createHash('sha256').update(workdir).digest('hex').slice(0, 8);
  return `mcp-${name}-${hash}`;
}
