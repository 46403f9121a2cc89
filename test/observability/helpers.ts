/** Helpers of the observability tests: a free port, a daemon with `--metrics`, a parsed scrape. */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { startDaemon, type TestDaemon, type TestDaemonOptions } from '../helpers/daemon.js';

/** A TCP port free on 127.0.0.1 now (the kernel's pick, released again). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** A daemon with the observability listener on 127.0.0.1 and an audit log in its temp dir. */
export interface ObservedDaemon {
  daemon: TestDaemon;
  /** `http://127.0.0.1:PORT` */
  base: string;
  auditPath: string;
}

/** Starts a daemon with `--metrics http://127.0.0.1:<free port>` and `--audit-log <dir>/audit/audit.log`. */
export async function startObservedDaemon(options: TestDaemonOptions = {}): Promise<ObservedDaemon> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const auditDir = mkdtempSync(join(tmpdir(), 'execd-audit-'));
  onTestFinished(() => rmSync(auditDir, { recursive: true, force: true }));
  const auditPath = join(auditDir, 'audit.log');
  const daemon = await startDaemon({
    ...options,
    extraArgs: [...(options.extraArgs ?? []), '--metrics', base, '--audit-log', auditPath],
  });
  return { daemon, base, auditPath };
}

/** The samples of a Prometheus text exposition, keyed by `name{labels}` exactly as written. */
export function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

/** GETs `/metrics` and parses it. */
export async function scrape(base: string): Promise<{ text: string; samples: Map<string, number> }> {
  const response = await fetch(`${base}/metrics`);
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`);
  const text = await response.text();
  return { text, samples: samples(text) };
}

/** How much each sample named in `keys` grew between two scrapes (absent counts as 0). */
export function growth(
  before: Map<string, number>,
  after: Map<string, number>,
  keys: string[],
): Record<string, number> {
  return Object.fromEntries(keys.map((key) => [key, (after.get(key) ?? 0) - (before.get(key) ?? 0)]));
}
