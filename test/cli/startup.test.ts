/**
 * What `execd run` loads against a running daemon (SPEC §8, B5: its start-up is most of a short
 * run): the bundle's chunks that hold its own subcommand and the client library — no chunk with
 * zod, the daemon's modules, the other subcommands or the code that starts a daemon. Which
 * sources a chunk holds comes from the bundle's metafile (deploy/bundle.mjs).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CLI } from '../helpers/daemon.js';
import { cliWorld } from '../helpers/cli.js';
import { traceModules } from '../helpers/loaded-modules.js';

const BUNDLE = join(import.meta.dirname, '..', '..', 'dist', 'bundle');

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

/** The sources (paths as the metafile names them, e.g. `dist/client/cli/run.js`) in the bundle files loaded. */
function sourcesOf(loaded: string[]): string[] {
  const meta = JSON.parse(readFileSync(join(BUNDLE, 'meta.json'), 'utf8')) as {
    outputs: Record<string, { inputs: Record<string, unknown> }>;
  };
  const byUrl = new Map(
    Object.entries(meta.outputs).map(([file, output]) => [pathToFileURL(join(BUNDLE, '..', '..', file)).href, output]),
  );
  const bundled = loaded.filter((url) => url.startsWith(pathToFileURL(BUNDLE).href));
  expect(bundled.length).toBeGreaterThan(0);
  return bundled.flatMap((url) => {
    const output = byUrl.get(url);
    expect(output, `${url} is in the metafile`).toBeDefined();
    return Object.keys(output!.inputs);
  });
}

describe('execd run start-up', { timeout: 120_000 }, () => {
  it('with a daemon running, loads only the run subcommand and the client library', async () => {
    const world = cliWorld();
    // The first run starts the daemon (and loads what that takes).
    expect(await world.run(['run', '--', 'true'])).toMatchObject({ code: 0, stderr: '' });

    const traced = await traceModules([CLI, 'run', '--', 'echo', 'traced'], { env: world.env, cwd: world.dir });
    expect(traced).toMatchObject({ code: 0, stdout: 'traced\n', stderr: '' });
    const sources = sourcesOf([...traced.esm, ...traced.cjs]);
    expect(sources).toContain('dist/client/cli/run.js');
    expect(sources).toContain('dist/client/connection.js');
    expect(sources.filter((file) => file.includes('node_modules/zod/'))).toEqual([]);
    expect(sources.filter((file) => file.startsWith('dist/daemon/'))).toEqual([]);
    const unneeded = [...OTHER_SUBCOMMANDS, 'ensure-daemon', 'detach'].map((name) => `dist/client/cli/${name}.js`);
    expect(sources.filter((file) => unneeded.includes(file))).toEqual([]);
    // vscode-jsonrpc's protocol core, without its node entry (see protocol/jsonrpc.ts).
    expect(sources).toContain('node_modules/vscode-jsonrpc/lib/common/connection.js');
    expect(sources).not.toContain('node_modules/vscode-jsonrpc/lib/node/main.js');
    // Nothing comes from node_modules at run time: the bundle holds it all.
    expect([...traced.esm, ...traced.cjs].filter((url) => url.includes('/node_modules/'))).toEqual([]);
    expect(world.daemonPids()).toHaveLength(1);
  });
});
