/**
 * A daemon in the unprivileged condition of a container (SPEC §15; see
 * test/helpers/unprivileged.sh): uid 1000, no capabilities, `max_user_namespaces` 0, where `auto`
 * picks Landlock. Needs root, to write the namespace's uid/gid maps.
 */
import { chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { startDaemon, type TestDaemon } from './daemon.js';

const UNPRIVILEGED = join(import.meta.dirname, 'unprivileged.sh');

/** The uid the unprivileged daemon runs as. */
export const UNPRIVILEGED_UID = 1000;

/** A directory owned by the unprivileged user. */
export function ownedDir(path: string): string {
  mkdirSync(path, { recursive: true });
  chownSync(path, UNPRIVILEGED_UID, UNPRIVILEGED_UID);
  return path;
}

/**
 * An unprivileged daemon on a temp dir of its user's (removed after the test), and a workspace in
 * it; `outer` runs before the unprivileged condition is entered (a command that execs its arguments).
 */
export async function startUnprivilegedDaemon(
  outer: string[] = [],
): Promise<{ daemon: TestDaemon; base: string; workspace: string }> {
  if (process.getuid?.() !== 0) throw new Error('this test needs root: it writes the uid/gid maps of the namespace');
  const base = ownedDir(mkdtempSync(join(tmpdir(), 'execd-unpriv-')));
  onTestFinished(() => rmSync(base, { recursive: true, force: true }));
  const workspace = ownedDir(join(base, 'ws'));
  const daemon = await startDaemon({
    launcher: [...outer, 'bash', UNPRIVILEGED],
    socketPath: join(base, 'run', 'execd.sock'),
    stateDir: join(base, 'state'),
  });
  return { daemon, base, workspace };
}
