/** `connect` of the client library: a clear error without a daemon, and `autoStart` like the CLI's. */
import { describe, expect, it } from 'vitest';
// The built library, as a harness loads it: auto-start spawns the built CLI next to it.
import { connect, ExecdConnectError } from '../../dist/client/index.js';
import { SessionOpen, ShellRun } from '../../dist/protocol/index.js';
import { cliWorld } from '../helpers/cli.js';

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
});
