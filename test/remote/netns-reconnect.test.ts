/**
 * A run over TLS outlives a network cut (SPEC §14): the daemon in one network namespace, a
 * reconnecting client in another, and the link between them deleted while the run goes on. The
 * client notices (keep-alive), re-dials until the link is back, re-sends its keyed `shell/run`, and
 * gets the run's whole result; the command ran once. Needs root, `ip` (iproute2) and `openssl`.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ShellRunResult } from '../../protocol/types.js';
import { waitFor } from '../helpers/wait.js';
import { collect, serveInLeaf, startLab } from './netns-lab.js';
import { makeCa, makeCert } from './pki.js';

const PORT = 7443;
const KEEP_ALIVE_MS = 500;
const CUT_MS = 3_000;
const HARNESS = join(import.meta.dirname, 'reconnect-harness.mjs');

describe('a keyed run across a cut network link', () => {
  it('is collected whole by the reconnecting client once the link is back, and ran once', async () => {
    const { lab, dir } = startLab('execd-netns-cut-');
    const link = lab.addLeaf('A');
    const ca = makeCa(dir, 'server-ca');
    const server = makeCert(dir, ca, 'server', [link.leafIp]);
    const work = join(dir, 'work');
    mkdirSync(work, { recursive: true, mode: 0o700 });
    const daemon = serveInLeaf(lab, link, dir, PORT, server);
    const daemonLog = collect(daemon, 'stderr');
    await waitFor(() => daemonLog().includes('"msg":"listening"'), 'the daemon to listen', { timeoutMs: 60_000 });

    const started = join(work, 'started');
    const count = join(work, 'count');
    const configPath = join(dir, 'client.json');
    writeFileSync(
      configPath,
      JSON.stringify({
        url: `tls://${link.leafIp}:${PORT}`,
        ca: ca.cert,
        token: readFileSync(join(dir, 'state', 'token'), 'utf8').trim(),
        keepAliveMs: KEEP_ALIVE_MS,
        cwd: work,
        // Long enough to span the cut and the re-dial; each time it runs it adds a line to `count`.
        command: `echo ran >> count; touch started; sleep ${(CUT_MS + 3_000) / 1000}; echo done`,
      }),
    );
    const client = lab.spawnIn(lab.hub, [process.execPath, HARNESS, configPath]);
    const clientOut = collect(client, 'stdout');
    const clientErr = collect(client, 'stderr');

    await waitFor(() => existsSync(started), 'the run to start', { timeoutMs: 30_000 });
    lab.cut('A');
    const cutAt = performance.now();
    await new Promise((resolve) => setTimeout(resolve, CUT_MS));
    lab.restore('A');
    await waitFor(() => clientOut().includes('\n'), 'the client to print its outcome', { timeoutMs: 60_000 });
    const outcome = JSON.parse(clientOut()) as {
      result?: ShellRunResult;
      error?: string;
      ms: number;
      reconnects: number[];
    };
    console.log(
      `link cut for ${CUT_MS} ms during the run: ${outcome.error ?? `exit ${outcome.result?.exitCode}`}, ` +
        `answered ${Math.round(performance.now() - cutAt)} ms after the cut, reconnected at ${JSON.stringify(outcome.reconnects)} ms, ` +
        `ran ${readFileSync(count, 'utf8').split('\n').filter(Boolean).length} time(s)`,
    );
    expect(outcome.error, clientErr()).toBeUndefined();
    expect(outcome.result).toMatchObject({ exitCode: 0, stdout: { text: 'done\n' } });
    expect(outcome.reconnects.length).toBeGreaterThanOrEqual(1);
    expect(readFileSync(count, 'utf8')).toBe('ran\n');
  });
});
