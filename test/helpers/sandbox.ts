/** Helpers of the sandbox tests: a session in a fresh workspace, and finding confined processes. */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { SessionOpen } from '../../protocol/methods.js';
import type { SessionSandbox } from '../../protocol/sandbox.js';
import { startDaemon, type TestDaemonOptions } from './daemon.js';
import { pidsWithArgument } from './procs.js';
import { waitFor } from './wait.js';

/**
 * A sandbox runner the suites run against, with what differs between them: bubblewrap mounts
 * (EROFS, a private /tmp, its own pid namespace and network), Landlock allows (EACCES, the host's
 * temp dir, no namespace).
 */
export interface BackendUnderTest {
  name: 'bwrap' | 'landlock';
  /** The daemon's `sandboxBackend`. */
  config: { sandboxBackend: 'bwrap' | 'landlock' };
  /** What reading a hidden place says. */
  hiddenError: string;
  /** A private writable /tmp, in read-only mode too. */
  privateTmp: boolean;
  /** Host processes of `sleep & …; sleep`: the two sleeps (bash execs the last), and bwrap with its pid-1 helper. */
  pidsOfTwoSleeps: number;
}

/** The runners of the sandbox suites: each runs once per runner. */
export const BACKENDS: BackendUnderTest[] = [
  {
    name: 'bwrap',
    config: { sandboxBackend: 'bwrap' },
    hiddenError: 'No such file or directory',
    privateTmp: true,
    pidsOfTwoSleeps: 4,
  },
  {
    name: 'landlock',
    config: { sandboxBackend: 'landlock' },
    hiddenError: 'Permission denied',
    privateTmp: false,
    pidsOfTwoSleeps: 2,
  },
];

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
 * The host pids of a confined command that runs two `sleep <token>`: the sleeps, and under bwrap
 * also bwrap and its pid-1 helper (the sandbox's own pid namespace hides them from `$$`).
 */
export function confinedPids(token: string, count = 4): Promise<number[]> {
  return waitFor(() => {
    const pids = pidsWithArgument(token);
    return pids.length >= count ? pids : undefined;
  }, 'the confined processes');
}
