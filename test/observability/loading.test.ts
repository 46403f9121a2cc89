/**
 * prom-client is loaded only when the observability listener is on (SPEC §18): not in the static
 * import graph of `execd serve` in the bundle (its metafile, deploy/bundle.mjs), not loaded by a
 * real `execd serve` without `--metrics`, and loaded (and working) with it.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { CLI } from '../helpers/daemon.js';
import { traceModules } from '../helpers/loaded-modules.js';
import { freePort } from './helpers.js';

const ROOT = join(import.meta.dirname, '..', '..');
const BUNDLE = join(ROOT, 'dist', 'bundle');

interface Metafile {
  outputs: Record<string, { inputs: Record<string, unknown>; imports: Array<{ path: string; kind: string }> }>;
}

/** The outputs reachable from `start` through static imports only. */
function staticClosure(meta: Metafile, start: string): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file) || !meta.outputs[file]) return;
    seen.add(file);
    for (const edge of meta.outputs[file].imports) if (edge.kind === 'import-statement') visit(edge.path);
  };
  visit(start);
  return seen;
}

/** Runs `execd serve` traced until it exits by itself (idle), with `args` added. */
async function tracedServe(args: string[]) {
  const dir = mkdtempSync(join(tmpdir(), 'execd-loading-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const traced = await traceModules(
    [
      CLI,
      'serve',
      '--socket',
      join(dir, 'run', 'execd.sock'),
      '--state-dir',
      join(dir, 'state'),
      '--idle-exit-ms',
      '1500',
      ...args,
    ],
    { cwd: dir },
  );
  expect(traced.code, traced.stderr).toBe(0);
  return [...traced.esm, ...traced.cjs];
}

describe('prom-client loading', { timeout: 120_000 }, () => {
  it('is in no chunk the serve path imports statically, only behind a dynamic import', () => {
    const meta = JSON.parse(readFileSync(join(BUNDLE, 'meta.json'), 'utf8')) as Metafile;
    const holding = (source: string) =>
      Object.keys(meta.outputs).filter((file) => file.endsWith('.js') && source in meta.outputs[file]!.inputs);
    const [serve] = holding('dist/client/cli/serve.js');
    const [server] = holding('dist/daemon/server.js');
    expect(serve && server).toBeTruthy();
    const promChunks = holding('node_modules/prom-client/index.js');
    expect(promChunks).toHaveLength(1);
    for (const start of ['dist/bundle/main.js', serve!, server!]) {
      const closure = staticClosure(meta, start);
      expect(
        [...closure].filter((file) => promChunks.includes(file)),
        start,
      ).toEqual([]);
    }
    // The one way in: the observability module's dynamic import.
    const importers = Object.entries(meta.outputs)
      .filter(([, output]) => output.imports.some((edge) => edge.path === promChunks[0]))
      .map(([file, output]) => ({
        file,
        kind: output.imports.find((edge) => edge.path === promChunks[0])!.kind,
        holdsIndex: 'dist/daemon/observability/index.js' in output.inputs,
      }));
    expect(importers).toEqual([{ file: expect.any(String) as unknown, kind: 'dynamic-import', holdsIndex: true }]);
  });

  it('execd serve without --metrics loads neither prom-client nor the observability modules', async () => {
    const loaded = await tracedServe([]);
    expect(loaded.some((url) => url.includes('/dist/bundle/server-'))).toBe(true);
    expect(loaded.filter((url) => /prom-client|\/metrics-|\/observability-/.test(url))).toEqual([]);
  });

  it('execd serve --metrics loads the metrics chunk and answers /metrics', async () => {
    const port = await freePort();
    const tracing = tracedServe(['--metrics', `http://127.0.0.1:${port}`]);
    let text = '';
    for (let attempt = 0; attempt < 200 && text === ''; attempt++) {
      text = await fetch(`http://127.0.0.1:${port}/metrics`)
        .then((response) => response.text())
        .catch(() => '');
      if (text === '') await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(text).toContain('# TYPE execd_commands_total counter');
    const loaded = await tracing;
    expect(loaded.filter((url) => /\/dist\/bundle\/metrics-/.test(url))).toHaveLength(1);
  });
});
