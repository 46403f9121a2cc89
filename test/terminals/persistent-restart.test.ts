/**
 * The persistent bash after a daemon restart (issue 26.11): the shell the model exported into is
 * gone, and the fresh one's first result says so in one line instead of answering `Z=` as if
 * nothing happened — for the same tool on a reconnecting client and for a restarted harness.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { shellReplacedLine } from '../../client/terminal-render.js';
import { createShellTools } from '../../client/tool/index.js';
import type { ExecdClient } from '../../client/connection.js';
import { TerminalRun } from '../../protocol/methods.js';
import { startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';

const SHUT_DOWN = shellReplacedLine({ exitCode: null, signal: null, detail: 'daemon shut down' });

async function persistentBash(client: ExecdClient, cwd: string) {
  const tools = await createShellTools({ client, session: { id: 'agent', cwd }, persistent: true, idleMs: 800 });
  const shell = tools.shell;
  return (command: string) => shell.execute({ command, description: 'A step of the test' });
}

/** A daemon whose shell exported Z=1, stopped and started again on the same socket and state dir. */
async function restarted(client: (daemon: TestDaemon) => Promise<ExecdClient>) {
  const first = await startDaemon();
  const cwd = join(first.dir, 'ws');
  mkdirSync(cwd, { recursive: true });
  const before = await client(first);
  const bash = await persistentBash(before, cwd);
  expect((await bash('export Z=1; cd /tmp; echo "Z=$Z"')).text).toBe('Z=1\n');
  expect(await first.stop()).toBe(0);
  const second = await startDaemon({ stateDir: first.stateDir, socketPath: first.socketPath });
  return { before, bash, second, cwd };
}

describe('the persistent bash after a daemon restart', { timeout: 60_000 }, () => {
  it('the same tool on a reconnecting client says its shell was replaced, once', async () => {
    const { before, bash, second, cwd } = await restarted((daemon) => daemon.connect({ reconnect: true }));
    await waitFor(() => before.info.daemon.pid === second.pid, 'the client reconnected to the new daemon');
    const after = await bash('echo "Z=$Z $PWD"');
    console.log(`first result after the restart: ${JSON.stringify(after.text)}`);
    expect(after.text).toBe(`Z= ${cwd}\n${SHUT_DOWN}`);
    expect((await bash('echo again')).text).toBe('again\n');
  });

  it('a restarted harness finds only the ended shell and says so; terminal/run of it answers exited', async () => {
    const { second, cwd } = await restarted((daemon) => daemon.connect());
    const client = await second.connect();
    const bash = await persistentBash(client, cwd);
    // The previous daemon's shell is listed as exited: a run of it says so, not "not a shell".
    const old = await client
      .call(TerminalRun, { sessionId: 'agent', terminalId: 'term-1', command: 'echo' })
      .catch((error: Error) => error.message);
    console.log(`terminal/run of the restored shell: ${JSON.stringify(old)}`);
    expect(old).toMatchObject({ state: 'exited', waitReason: 'session_exit', output: '' });
    expect((await bash('echo "Z=$Z"')).text).toBe(`Z=\n${SHUT_DOWN}`);
    expect((await bash('echo "Z=$Z"')).text).toBe('Z=\n');
  });
});
