/** Helpers of the sandbox tests: a session in a fresh workspace, and finding confined processes. */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { SessionOpen } from '../../protocol/methods.js';
import type { SessionSandbox } from '../../protocol/sandbox.js';
import { startDaemon, type TestDaemonOptions } from './daemon.js';
import { pidsWithArgument } from './procs.js';
import { waitFor } from './wait.js';

/** A daemon with session `s1` whose cwd is a fresh workspace directory `<dir>/ws`. */
export async function sandboxedSession(sandbox?: SessionSandbox, daemonOptions: TestDaemonOptions = {}) {
  const daemon = await startDaemon(daemonOptions);
  const workspace = join(daemon.dir, 'ws');
  mkdirSync(workspace);
  const client = await daemon.connect();
  await client.call(SessionOpen, { sessionId: 's1', cwd: workspace, ...(sandbox && { sandbox }) });
  return { daemon, client, workspace };
}

/** A `sleep` duration unique to this call, to find a command's processes by their command line. */
export function uniqueSleep(): string {
  return `${1000 + Math.floor(Math.random() * 1000)}.${process.pid}${Date.now() % 100000}`;
}

/**
 * The host pids of a confined command that runs two `sleep <token>`: bwrap, its pid-1 helper,
 * bash and the sleeps (the sandbox's own pid namespace hides them from `$$`).
 */
export function confinedPids(token: string): Promise<number[]> {
  return waitFor(() => {
    const pids = pidsWithArgument(token);
    return pids.length >= 4 ? pids : undefined;
  }, 'the confined processes');
}
