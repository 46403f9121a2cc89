/** `connect` of the client library: a clear error without a daemon, and `autoStart` like the CLI's. */
import { describe, expect, it, onTestFinished } from 'vitest';
// The built library, as a harness loads it: auto-start spawns the built CLI next to it.
import { connect, createShellTools, ExecdConnectError } from '../../dist/client/index.js';
import { SessionOpen, ShellRun } from '../../dist/protocol/index.js';
import { cliWorld } from '../helpers/cli.js';
import { startDaemon } from '../helpers/daemon.js';

describe('connect', () => {
  it('says that no daemon is running, not that a token file is missing', async () => {
    const world = cliWorld();
    const attempt = connect({ socketPath: world.socketPath, stateDir: world.stateDir });
    await expect(attempt).rejects.toBeInstanceOf(ExecdConnectError);
    await expect(attempt).rejects.toThrow(`no execd daemon is running at ${world.socketPath}`);
    expect(world.daemonPids()).toEqual([]);
  });

  it('starts a daemon with autoStart: true, and a second autoStart joins it', async () => {
    const world = cliWorld({ env: { EXECD_IDLE_EXIT_MS: '0' } });
    const endpoint = { socketPath: world.socketPath, stateDir: world.stateDir, autoStart: true };
    const [first, second] = await Promise.all([connect(endpoint), connect(endpoint)]);
    try {
      expect(first.info.daemon.pid).toBe(second.info.daemon.pid);
      expect(world.daemonPids()).toEqual([first.info.daemon.pid]);
      await first.call(SessionOpen, { sessionId: 'lib', cwd: world.dir });
      const result = await first.call(ShellRun, { sessionId: 'lib', command: 'echo started' });
      expect(result.stdout.text).toBe('started\n');
    } finally {
      first.close();
      second.close();
    }
  });

  it('a call after the daemon went away fails in execd words, and so does the tool the model calls', async () => {
    const daemon = await startDaemon();
    const client = await connect({ socketPath: daemon.socketPath, stateDir: daemon.stateDir });
    onTestFinished(() => client.close());
    await client.call(SessionOpen, { sessionId: 'gone', cwd: daemon.dir });
    const tools = await createShellTools({ client, session: { id: 'gone' } });
    const closed = new Promise<void>((resolveClosed) => client.onClose(resolveClosed));
    await daemon.crash();
    await closed;
    const attempt = client.call(ShellRun, { sessionId: 'gone', command: 'true' });
    await expect(attempt).rejects.toBeInstanceOf(ExecdConnectError);
    await expect(attempt).rejects.toThrow(
      /^the connection to the daemon is closed.*; the call was not sent: connect again$/,
    );
    const result = await tools.shell.execute({ command: 'true', description: 'After the crash' });
    console.log(`the model reads: ${result.text}`);
    expect(result.isError).toBe(true);
    expect(result.text).not.toContain('Connection is disposed');
    expect(result.text).toContain('the connection to the daemon is closed');
    tools.dispose();
  });
});
