/**
 * The session a CLI command works in. Sessions live in the daemon, not in a connection, so every
 * CLI process opens (attaches to) the same named session — `cli` unless `--session` says
 * otherwise — and `execd start` in one shell, `execd read` in another, see the same jobs.
 *
 * The CLI never changes a session's facts (docs/sessions.md): it attaches with `session/open { sessionId }`
 * alone, so looking at an agent's session (`execd jobs --session agent-A`) leaves its cwd, env and
 * sandbox as they are. Only the commands that start something (`run`, `start`, `term open`) create
 * a session that does not exist yet, with the current directory as its cwd (to a daemon elsewhere,
 * the daemon's own), and close it again when their call was refused.
 */
import { SessionClose, SessionOpen } from '../../protocol/methods.js';
import { ExecdRpcError, type ExecdClient } from '../connection.js';
import type { Endpoint } from '../endpoint.js';
import { endpointOf, ENDPOINT_OPTIONS, parseCommand, type GlobalFlags } from './args.js';
import { ADMIN_OPTIONS, withClient } from './autostart.js';
import { CliError, usageError } from './errors.js';

/** The session flag of the subcommands that work in a session. */
export const SESSION_OPTION = { session: { type: 'string', default: 'cli' } } as const;

/** Help line of the session flag. */
export const SESSION_HELP = `  --session ID       the session to work in (default: cli)`;

function isNotFound(error: unknown): boolean {
  return error instanceof ExecdRpcError && error.errorName === 'SESSION_NOT_FOUND';
}

/** Attaches to `sessionId` as it is; false when no such session exists. */
export async function attachSession(client: ExecdClient, sessionId: string): Promise<boolean> {
  try {
    await client.call(SessionOpen, { sessionId });
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}

/**
 * The working directory the CLI sends by default: its own, on the daemon's machine; none to a
 * daemon elsewhere (`EXECD_URL`), whose files are not this machine's — the daemon then uses the
 * session's cwd, or its own.
 */
export function defaultWorkdir(): string | undefined {
  return process.env.EXECD_URL ? undefined : process.cwd();
}

/**
 * Attaches to `sessionId`, creating it when it does not exist — with the current directory as its
 * cwd, or, to a daemon elsewhere, with the daemon's own — and a racing creator that came first is
 * attached to. Resolves true when this call created the session.
 */
export async function openSession(client: ExecdClient, sessionId: string): Promise<boolean> {
  const cwd = defaultWorkdir();
  if (cwd === undefined) return !(await client.call(SessionOpen, { sessionId, create: true })).reattached;
  if (await attachSession(client, sessionId)) return false;
  try {
    await client.call(SessionOpen, { sessionId, cwd });
    return true;
  } catch (error) {
    if (!(error instanceof ExecdRpcError && error.errorName === 'FORBIDDEN')) throw error;
    if (!(await attachSession(client, sessionId))) throw error;
    return false;
  }
}

/**
 * After `error` ended a call in a session this process just created, closes the session again: a
 * refused call (a workdir that does not exist, a sandbox that cannot run) leaves no session behind.
 * Best effort; what matters is reported by `error` itself.
 */
export async function forgetCreatedSession(client: ExecdClient, sessionId: string, error: unknown): Promise<void> {
  if (!(error instanceof ExecdRpcError)) return;
  await client.call(SessionClose, { sessionId }).catch(() => undefined);
}

/** The failure of a command that needs an existing session. */
export function noSession(command: string, sessionId: string): CliError {
  return new CliError(
    `execd ${command}: no session ${sessionId} in the daemon (execd run, execd start or a harness create one)`,
  );
}

/** Whom a command that takes `--all` works for: every session, or the one it opened. */
export type SessionScope = { all: true } | { sessionId: string };

/**
 * Connects (starting a daemon if needed) and calls `use` for every session (`--all`, an
 * administrative request) or, having attached to it, for `--session`; `ifAbsent` answers for a
 * session that does not exist.
 */
export function forScope<T>(
  endpoint: Endpoint,
  values: { all: boolean; session: string },
  use: (client: ExecdClient, scope: SessionScope) => Promise<T>,
  ifAbsent: () => T,
): Promise<T> {
  return withClient(
    endpoint,
    async (client) => {
      if (values.all) return use(client, { all: true });
      if (!(await attachSession(client, values.session))) return ifAbsent();
      return use(client, { sessionId: values.session });
    },
    values.all ? ADMIN_OPTIONS : undefined,
  );
}

/**
 * Connects (starting a daemon if needed), attaches to `sessionId` — creating it with `create`,
 * else failing as `command` when it does not exist — calls `use`, and closes.
 */
export function inSession<T>(
  endpoint: Endpoint,
  sessionId: string,
  use: (client: ExecdClient) => Promise<T>,
  how: { command: string; create?: boolean },
): Promise<T> {
  return withClient(endpoint, async (client) => {
    if (!how.create) {
      if (await attachSession(client, sessionId)) return use(client);
      // No such session: a job an earlier daemon left (kept across `execd stop --keep-jobs`, or
      // settled before a restart) is still reached by its session's id; anything else answers
      // that the session is missing.
      try {
        return await use(client);
      } catch (error) {
        if (isNotFound(error)) throw noSession(how.command, sessionId);
        throw error;
      }
    }
    const created = await openSession(client, sessionId);
    try {
      return await use(client);
    } catch (error) {
      if (created) await forgetCreatedSession(client, sessionId, error);
      throw error;
    }
  });
}

/** The one JOB argument of a job subcommand. */
export function jobIdArgument(command: string, positionals: string[]): string {
  if (positionals.length !== 1) {
    throw usageError(
      command,
      positionals.length === 0
        ? 'missing JOB (a job id such as bash-1)'
        : `expected one JOB, got ${positionals.length} arguments`,
    );
  }
  const jobId = positionals[0]!;
  // The daemon's job id shape (`bash-<n>`): anything else cannot name a job, so it is a usage error.
  if (!/^[a-z]+-\d+$/.test(jobId)) {
    throw usageError(command, `${JSON.stringify(jobId)} is not a job id (expected one such as bash-1)`);
  }
  return jobId;
}

/** Parses a job subcommand that takes only JOB, `--session` and the endpoint flags. */
export function parseJobCommand(command: string, argv: string[], globals: GlobalFlags) {
  const { values, positionals } = parseCommand(command, {
    args: argv,
    options: { ...ENDPOINT_OPTIONS, ...SESSION_OPTION },
    allowPositionals: true,
    strict: true,
  });
  return {
    jobId: jobIdArgument(command, positionals),
    sessionId: values.session,
    endpoint: endpointOf(values, globals),
  };
}
