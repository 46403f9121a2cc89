/** Shared set-up of the file-method tests: a daemon, a workspace and a session on it. */
import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { ExecdClient } from '../../client/connection.js';
import { SessionOpen } from '../../protocol/methods.js';
import type { SandboxMode } from '../../protocol/sandbox.js';
import { startDaemon, type TestDaemon, type TestDaemonOptions } from '../helpers/daemon.js';

/** A daemon with a workspace directory and a session in it. */
export interface FsFixture {
  daemon: TestDaemon;
  workspace: string;
  client: ExecdClient;
  sessionId: string;
}

/** Starts a daemon and opens session `sessionId` in `<dir>/ws` under `mode`. */
export async function fsFixture(
  mode: SandboxMode = 'danger-full-access',
  options: TestDaemonOptions & { sessionId?: string } = {},
): Promise<FsFixture> {
  const daemon = await startDaemon(options);
  const workspace = join(daemon.dir, 'ws');
  mkdirSync(workspace, { recursive: true });
  const sessionId = options.sessionId ?? 'fs';
  const client = await daemon.connect();
  await client.call(SessionOpen, { sessionId, cwd: workspace, sandbox: { mode, workspaceRoot: workspace } });
  return { daemon, workspace, client, sessionId };
}

/** A snapshot of a tree (names, sizes, contents) to assert that a refused call changed nothing. */
export function snapshot(dir: string): string {
  const lines: string[] = [];
  const walk = (at: string) => {
    for (const name of readdirSync(at).sort()) {
      const path = join(at, name);
      const stats = statSync(path, { throwIfNoEntry: false });
      if (stats?.isDirectory()) walk(path);
      else lines.push(`${path} ${stats?.size ?? 'dangling'} ${stats?.isFile() ? readFileSync(path, 'base64') : ''}`);
    }
  };
  walk(dir);
  return lines.join('\n');
}

/** Base64 of a UTF-8 string. */
export const b64 = (text: string): string => Buffer.from(text).toString('base64');
