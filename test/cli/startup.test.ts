/**
 * What `execd run` loads against a running daemon (SPEC §8, B5: its start-up is most of a short
 * run): its own subcommand and the client library — not zod, not the daemon's modules, not the
 * other subcommands, not the code that starts a daemon — and vscode-jsonrpc through `require`,
 * without its node entry (see protocol/jsonrpc.ts).
 */
import { describe, expect, it } from 'vitest';
import { CLI } from '../helpers/daemon.js';
import { cliWorld } from '../helpers/cli.js';
import { DIST_URL, traceModules, zodFiles } from '../helpers/loaded-modules.js';

const OTHER_SUBCOMMANDS = [
  'serve',
  'start',
  'jobs',
  'read',
  'peek',
  'wait',
  'kill',
  'release',
  'status',
  'config',
  'stop',
];

describe('execd run start-up', { timeout: 120_000 }, () => {
  it('with a daemon running, loads only the run subcommand and the client library', async () => {
    const world = cliWorld();
    // The first run starts the daemon (and loads what that takes).
    expect(await world.run(['run', '--', 'true'])).toMatchObject({ code: 0, stderr: '' });

    const traced = await traceModules([CLI, 'run', '--', 'echo', 'traced'], { env: world.env, cwd: world.dir });
    expect(traced).toMatchObject({ code: 0, stdout: 'traced\n', stderr: '' });
    const loaded = [...traced.esm, ...traced.cjs];
    expect(loaded).toContain(`${DIST_URL}/client/cli/run.js`);
    expect(loaded).toContain(`${DIST_URL}/client/connection.js`);
    expect(zodFiles(loaded)).toEqual([]);
    expect(loaded.filter((url) => url.startsWith(`${DIST_URL}/daemon/`))).toEqual([]);
    const unneeded = [...OTHER_SUBCOMMANDS, 'ensure-daemon', 'detach'].map(
      (name) => `${DIST_URL}/client/cli/${name}.js`,
    );
    expect(loaded.filter((url) => unneeded.includes(url))).toEqual([]);
    expect(traced.cjs).toContainEqual(
      expect.stringMatching(/\/node_modules\/vscode-jsonrpc\/lib\/common\/connection\.js$/),
    );
    expect(traced.esm.filter((url) => url.includes('/node_modules/vscode-jsonrpc/'))).toEqual([]);
    expect(traced.cjs.filter((url) => url.endsWith('/node_modules/vscode-jsonrpc/lib/node/main.js'))).toEqual([]);
    expect(world.daemonPids()).toHaveLength(1);
  });
});
