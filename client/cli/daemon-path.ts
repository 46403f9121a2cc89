/**
 * The daemon side of `execd cp`, `ls` and `cat`: `:PATH` (in `--session`) or `SESSION:PATH`, the
 * `docker cp` / `kubectl cp` convention. Pure. A path that starts with `/` or `.` is always local.
 */

/** A path on the daemon's side, and the session it resolves in. */
export interface DaemonPath {
  sessionId: string;
  path: string;
}

/** The daemon path `arg` names, or undefined when it is a local path. */
export function parseDaemonPath(arg: string, defaultSession: string): DaemonPath | undefined {
  if (arg.startsWith('/') || arg.startsWith('.')) return undefined;
  const colon = arg.indexOf(':');
  if (colon < 0) return undefined;
  const session = arg.slice(0, colon);
  const path = arg.slice(colon + 1) || '.';
  return { sessionId: session === '' ? defaultSession : session, path };
}
