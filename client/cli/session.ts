/**
 * The session a CLI command works in. Sessions live in the daemon, not in a connection, so every
 * CLI process opens (reattaches to) the same named session — `cli` unless `--session` says
 * otherwise — and `execd start` in one shell, `execd read` in another, see the same jobs.
 */
import { SessionOpen } from '../../protocol/methods.js';
import type { ExecdClient } from '../connection.js';
import type { Endpoint } from '../endpoint.js';
import { endpointOf, ENDPOINT_OPTIONS, parseCommand, type GlobalFlags } from './args.js';
import { withClient } from './autostart.js';
import { usageError } from './errors.js';

/** The session flag of the subcommands that work in a session. */
export const SESSION_OPTION = { session: { type: 'string', default: 'cli' } } as const;

/** Help line of the session flag. */
export const SESSION_HELP = `  --session ID       the session to work in (default: cli)`;

/** Opens (or reattaches to) `sessionId` on this connection, with the current directory as its cwd. */
export async function openSession(client: ExecdClient, sessionId: string): Promise<void> {
  await client.call(SessionOpen, { sessionId, cwd: process.cwd() });
}

/** Whom a command that takes `--all` works for: every session, or the one it opened. */
export type SessionScope = { all: true } | { sessionId: string };

/**
 * Connects (starting a daemon if needed) and calls `use` for every session (`--all`) or, having
 * opened it, for `--session`.
 */
export function forScope<T>(
  endpoint: Endpoint,
  values: { all: boolean; session: string },
  use: (client: ExecdClient, scope: SessionScope) => Promise<T>,
): Promise<T> {
  return withClient(endpoint, async (client) => {
    if (values.all) return use(client, { all: true });
    await openSession(client, values.session);
    return use(client, { sessionId: values.session });
  });
}

/** Connects (starting a daemon if needed), opens `sessionId`, calls `use`, and closes. */
export function inSession<T>(
  endpoint: Endpoint,
  sessionId: string,
  use: (client: ExecdClient) => Promise<T>,
): Promise<T> {
  return withClient(endpoint, async (client) => {
    await openSession(client, sessionId);
    return use(client);
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
