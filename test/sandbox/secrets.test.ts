/**
 * The sandbox hides every secret the daemon was given (issue 27, point 15): the TLS private key
 * and certificate passed by path cannot be opened by a confined command — directly, through a
 * symlink in the workspace, from a run and from a job, under either sandbox backend — while an
 * unconfined command still reads them.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { JobWait, JobRead, SessionOpen, ShellStart } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { makeCa, makeCert } from '../remote/pki.js';

describe.each(['bwrap', 'landlock'] as const)('sandbox (%s): the daemon secrets', (backend) => {
  it('a confined command cannot read the TLS key or certificate; an unconfined one can', async () => {
    // Outside /tmp: a confined command's /tmp is private and would hide it by accident.
    const pkiDir = mkdtempSync('/var/tmp/execd-secrets-');
    onTestFinished(() => rmSync(pkiDir, { recursive: true, force: true }));
    const ca = makeCa(pkiDir, 'ca');
    const server = makeCert(pkiDir, ca, 'server', ['127.0.0.1']);
    const daemon = await startDaemon({
      config: { sandboxBackend: backend },
      extraArgs: ['--listen', 'tls://127.0.0.1:0', '--tls-cert', server.cert, '--tls-key', server.key],
    });
    const workspace = join(daemon.dir, 'ws');
    mkdirSync(workspace);
    symlinkSync(server.key, join(workspace, 'key-link.pem'));
    const client = await daemon.connect();
    await client.call(SessionOpen, { sessionId: 'open', cwd: workspace });
    await client.call(SessionOpen, { sessionId: 'ro', cwd: workspace, sandbox: { mode: 'read-only' } });
    const probe = `cat '${server.key}' key-link.pem '${server.cert}' 2>&1; echo "key bytes: $(wc -c < '${server.key}')"`;

    const open = await client.run({ sessionId: 'open', command: probe });
    expect(open.stdout.text).toContain('PRIVATE KEY');

    const confined = await client.run({ sessionId: 'ro', command: probe });
    console.log(`confined read of the TLS key: ${JSON.stringify(confined.stdout.text)}`);
    expect(confined.sandbox).toMatchObject({ mode: 'read-only', enforcement: backend });
    expect(confined.stdout.text).not.toContain('PRIVATE KEY');
    expect(confined.stdout.text).not.toContain('BEGIN CERTIFICATE');
    // bwrap covers it with a device node on a nodev mount, Landlock grants its siblings only: opening it is refused.
    expect(confined.stdout.text).toMatch(/server\.key: Permission denied\ncat: key-link\.pem: Permission denied/);
    expect(confined.stdout.text).toContain('key bytes: \n');

    const { jobId } = await client.call(ShellStart, { sessionId: 'ro', command: probe });
    await client.call(JobWait, { sessionId: 'ro', jobId, timeoutMs: 20_000 });
    const job = await client.call(JobRead, { sessionId: 'ro', jobId });
    expect(job.delta).toContain('key bytes: \n');
    expect(job.delta).not.toContain('PRIVATE KEY');
  });
});
