/**
 * Daemons on two hosts, driven from a third, over TLS (SPEC §12): three network namespaces joined
 * by veth pairs stand in for the hosts. Needs root, `ip` (iproute2) and `openssl`.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { describe, expect, it, onTestFinished } from 'vitest';
import { waitFor } from '../helpers/wait.js';
import { collect, namespaceExists, NetnsLab, serveInLeaf, startLab } from './netns-lab.js';
import { makeCa, makeCert } from './pki.js';

const KEEP_ALIVE_MS = 2_000;
const JOB_LINES = 2_000;
const PORT = 7443;
const HARNESS = join(import.meta.dirname, 'harness.mjs');

/** The connection attempts the harness expects to be refused. */
type RefusalCase = 'wrongCa' | 'wrongClientCert' | 'noClientCert' | 'wrongToken';
/** How one of them ended (harness.mjs `refusal`). */
interface Refusal {
  refused: boolean;
  name?: string;
  message?: string;
}
/** The call left pending while host A vanished (harness.mjs `vanished` step). */
interface PendingOutcome {
  failed: boolean;
  name?: string;
  message?: string;
  afterMs?: number;
  stillB: string;
}

describe('daemons in two network namespaces, a harness in a third', () => {
  it('drives both at once over TLS, refuses wrong material, and fails a pending call when a host vanishes', async () => {
    const { lab, dir } = startLab('execd-netns-');
    const links = { A: lab.addLeaf('A'), B: lab.addLeaf('B') };

    const serverCa = makeCa(dir, 'server-ca');
    const clientCa = makeCa(dir, 'client-ca');
    const rogueCa = makeCa(dir, 'rogue-ca');
    const client = makeCert(dir, clientCa, 'client');
    const rogueClient = makeCert(dir, rogueCa, 'rogue-client');

    const daemons: Record<string, { url: string; token: string; cwd: string }> = {};
    const logs: Record<string, () => string> = {};
    for (const [name, link] of Object.entries(links)) {
      const server = makeCert(dir, serverCa, `server-${name}`, [link.leafIp]);
      const home = join(dir, name);
      mkdirSync(join(home, 'work'), { recursive: true, mode: 0o700 });
      const proc = serveInLeaf(lab, link, home, PORT, { ...server, clientCa: clientCa.cert });
      logs[name] = collect(proc, 'stderr');
      daemons[name] = { url: `tls://${link.leafIp}:${PORT}`, token: '', cwd: join(home, 'work') };
    }
    for (const name of Object.keys(links)) {
      await waitFor(() => logs[name]!().includes('"msg":"listening"'), `daemon ${name} to listen`, {
        timeoutMs: 60_000,
      });
      daemons[name]!.token = readFileSync(join(dir, name, 'state', 'token'), 'utf8').trim();
    }

    const configPath = join(dir, 'harness.json');
    writeFileSync(
      configPath,
      JSON.stringify({
        daemons,
        serverCa: serverCa.cert,
        rogueCa: rogueCa.cert,
        client,
        rogueClient,
        keepAliveMs: KEEP_ALIVE_MS,
        jobLines: JOB_LINES,
      }),
    );
    const harness = lab.spawnIn(lab.hub, [process.execPath, HARNESS, configPath]);
    const out = collect(harness, 'stdout');
    const err = collect(harness, 'stderr');
    const step = async <Facts extends object>(name: string): Promise<Facts> => {
      const line = await waitFor(
        () => {
          const found = out()
            .split('\n')
            .find((text) => text.startsWith(`{"step":"${name}"`));
          if (found === undefined && harness.exitCode !== null)
            throw new Error(`harness exited (${harness.exitCode}): ${err()}`);
          return found;
        },
        `the harness's ${name} step`,
        { timeoutMs: 60_000 },
      );
      return JSON.parse(line) as Facts;
    };

    const driven = await step<Record<'A' | 'B', { run: string; job: string }>>('driven');
    const expected = (name: string) =>
      Array.from({ length: JOB_LINES }, (_, index) => `${name}-${index + 1}\n`).join('');
    // Each daemon ran its commands on its own host, and each job's output came back whole and alone.
    expect(driven.A.run).toBe(`fg-A ${links.A.leafIp} \n`);
    expect(driven.B.run).toBe(`fg-B ${links.B.leafIp} \n`);
    expect(driven.A.job).toBe(expected('A'));
    expect(driven.B.job).toBe(expected('B'));

    const refusals = await step<Record<RefusalCase, Refusal>>('refusals');
    console.log('refusals:', JSON.stringify(refusals));
    expect(refusals.wrongCa).toMatchObject({ refused: true, name: 'ExecdConnectError' });
    expect(refusals.wrongCa.message).toMatch(/certificate/);
    expect(refusals.wrongClientCert).toMatchObject({ refused: true, name: 'ExecdConnectError' });
    expect(refusals.wrongClientCert.message).toMatch(/client certificate/);
    expect(refusals.noClientCert).toMatchObject({ refused: true, name: 'ExecdConnectError' });
    expect(refusals.noClientCert.message).toMatch(/alert: certificate required/);
    expect(refusals.wrongToken).toMatchObject({ refused: true, name: 'ExecdRpcError' });
    expect(refusals.wrongToken.message).toMatch(/token/);

    await step('pending');
    lab.vanish('A');
    harness.stdin!.write('vanished\n');
    const vanished = await step<PendingOutcome>('vanished');
    console.log(`pending call failed ${vanished.afterMs} ms after host A vanished (keepAliveMs ${KEEP_ALIVE_MS})`);
    expect(vanished).toMatchObject({ failed: true, name: 'ExecdConnectError' });
    expect(vanished.message).toMatch(/keepAliveMs/);
    // Not a hang: well inside a few keep-alive periods (the bound itself is keepAliveMs).
    expect(vanished.afterMs).toBeLessThan(KEEP_ALIVE_MS * 3);
    // The other host is unaffected.
    expect(vanished.stillB).toBe('B-still-here\n');
    expect(namespaceExists(links.A.ns)).toBe(false);
  }, 180_000);

  it('removes everything it made when building the network fails half-way', async () => {
    const lab = new NetnsLab();
    onTestFinished(() => lab.remove());
    lab.create();
    const link = lab.addLeaf('A');
    const sleeper = lab.spawnIn(link.ns, ['sleep', '300']);
    // An interface name longer than Linux's 15 characters: `ip link add` fails.
    expect(() => lab.addLeaf('toolongname')).toThrow();
    await lab.remove();
    expect(sleeper.exitCode !== null || sleeper.signalCode !== null).toBe(true);
    const left = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
    expect(left).not.toContain(lab.suffix);
  });
});
