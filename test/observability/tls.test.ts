/**
 * Observability over TLS (SPEC §18): `--metrics https://…` with the `--listen` certificate pair,
 * and the audit log naming a TLS peer by its address and client certificate subject.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { get } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { connect } from '../../client/connect.js';
import { SessionOpen, ShellRun } from '../../protocol/methods.js';
import { CLI } from '../helpers/daemon.js';
import { startTlsDaemon } from '../remote/loopback-tls.js';
import { pem } from '../remote/pki.js';
import { waitFor } from '../helpers/wait.js';
import { freePort } from './helpers.js';

/** An HTTPS GET trusting `ca`; resolves with the status and body. */
function httpsGet(url: string, ca: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get(url, { ca, agent: false }, (response) => {
      let body = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      response.once('end', () => resolve({ status: response.statusCode ?? 0, body }));
    }).once('error', reject);
  });
}

describe('observability over TLS', { timeout: 120_000 }, () => {
  it('serves /readyz over https with the --tls-cert pair; the audit log names the TLS peer and its certificate', async () => {
    const port = await freePort();
    const auditDir = mkdtempSync(join(tmpdir(), 'execd-audit-'));
    onTestFinished(() => rmSync(auditDir, { recursive: true, force: true }));
    const auditPath = join(auditDir, 'audit.log');
    const target = await startTlsDaemon({
      clientCa: true,
      extraArgs: ['--metrics', `https://127.0.0.1:${port}`, '--audit-log', auditPath],
    });
    expect(await httpsGet(`https://127.0.0.1:${port}/readyz`, pem(target.ca.cert))).toEqual({
      status: 200,
      body: 'ready\n',
    });
    // No client certificate is asked for on this port: a probe has none.
    const metrics = await httpsGet(`https://127.0.0.1:${port}/metrics`, pem(target.ca.cert));
    expect(metrics.status).toBe(200);

    const client = await connect(target.url, {
      ca: pem(target.ca.cert),
      cert: pem(target.client.cert),
      key: pem(target.client.key),
      token: target.token,
      clientName: 'tls-agent',
    });
    onTestFinished(() => client.close());
    await client.call(SessionOpen, { sessionId: 'remote', cwd: target.daemon.dir });
    await client.call(ShellRun, { sessionId: 'remote', command: 'true' });
    const after = await httpsGet(`https://127.0.0.1:${port}/metrics`, pem(target.ca.cert));
    expect(after.body).toMatch(/^execd_connections\{transport="tls"\} 1$/m);

    await waitFor(() => readFileSync(auditPath, 'utf8').includes('"event":"command.end"'), 'the end line');
    const start = JSON.parse(readFileSync(auditPath, 'utf8').split('\n')[0]!) as Record<string, unknown>;
    expect(start).toMatchObject({
      event: 'command.start',
      client: 'tls-agent',
      transport: 'tls',
      peer: expect.stringMatching(/^127\.0\.0\.1:\d+$/) as unknown,
      certSubject: 'CN=client',
    });
  });

  it('refuses --metrics https:// without the certificate pair, and an unknown scheme, as usage errors', () => {
    const serve = (args: string[]) => spawnSync(process.execPath, [CLI, 'serve', ...args], { encoding: 'utf8' });
    const https = serve(['--metrics', 'https://127.0.0.1:9464']);
    expect([https.status, https.stderr.trim()]).toEqual([
      2,
      "execd serve: --metrics https:// (or tls://) needs --tls-cert and --tls-key (see 'execd serve --help')",
    ]);
    const ftp = serve(['--metrics', 'ftp://127.0.0.1:9464']);
    expect(ftp.status).toBe(2);
    expect(ftp.stderr).toMatch(/--metrics must be http:\/\/HOST:PORT/);
  });
});
