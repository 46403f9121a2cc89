/** `DSH_HOME`, the harness's home directory that every command of a session gets (docs/sessions.md). */
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

/** Where `DSH_HOME` may come from, first wins. */
export interface DshHomeSources {
  /** The session's fact (`ToolSession.dshHome`, else its `dshEnv.DSH_HOME`). */
  session?: { dshHome?: string; dshEnv?: Record<string, string> };
  /** The tool options' `dshHome`, for every session of the harness. */
  configured?: string;
  /** The harness process's environment; default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** The user's home directory; default `os.homedir()`. */
  home?: string;
}

/** The first non-empty string of `values`. */
function firstSet(...values: Array<string | undefined>): string | undefined {
  return values.find((value) => value !== undefined && value.length > 0);
}

/**
 * `DSH_HOME` as the seam defaults it: the session's fact, else the configured one, else
 * `$DSH_HOME` of the harness process, else `~/.dsh`; a relative path is made absolute against the
 * harness's cwd, since commands run elsewhere.
 */
export function resolveDshHome(sources: DshHomeSources = {}): string {
  const { session, configured, env = process.env } = sources;
  const given = firstSet(session?.dshHome, session?.dshEnv?.DSH_HOME, configured, env.DSH_HOME);
  return given === undefined ? join(sources.home ?? homedir(), '.dsh') : resolve(given);
}
