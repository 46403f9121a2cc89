/**
 * The file methods reach no further than a command of the same session (SPEC §13): the TLS key,
 * certificate and client CA and an external `--log-file` are refused like the state dir; a hard
 * link to a hidden file is refused by its inode wherever it is named; an append through a hard
 * link cannot write outside the workspace; and a root daemon's confined session reads only what a
 * capability-less command could.
 */
import { chownSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { SessionOpen } from '../../protocol/methods.js';
import { startTlsDaemon } from '../remote/loopback-tls.js';
import { rejection } from '../helpers/rejection.js';
import { b64, fsFixture } from './helpers.js';

const IS_ROOT = process.getuid?.() === 0;

describe('what the file methods may reach', { timeout: 60_000 }, () => {
  it('the TLS key, certificate, client CA and an external log file are refused in every mode', async () => {
    const logDir = join(process.env.TMPDIR ?? '/tmp', `execd-reach-log-${process.pid}-${Date.now()}`);
    mkdirSync(logDir, { recursive: true });
    onTestFinished(() => rmSync(logDir, { recursive: true, force: true }));
    const logFile = join(logDir, 'daemon.log');
    // The log goes to the file: a tail feeds it to the test's reader until the daemon (which the
    // shell becomes by exec) exits.
    const tls = await startTlsDaemon({
      clientCa: true,
      extraArgs: ['--log-file', logFile],
      launcher: [
        'bash',
        '-c',
        `touch "${logFile}"; tail --pid=$$ -n +1 -F "${logFile}" >&2 2>/dev/null & exec "$@"`,
        'bash',
      ],
    });
    const client = await tls.daemon.connect();
    const secrets = [
      join(tls.pkiDir, 'server.key'),
      join(tls.pkiDir, 'server.crt'),
      join(tls.pkiDir, 'client-ca.crt'),
      logFile,
    ];
    for (const file of secrets) expect(readFileSync(file).length, file).toBeGreaterThan(0);
    for (const mode of ['read-only', 'workspace-write', 'danger-full-access'] as const) {
      const sessionId = `s-${mode}`;
      await client.call(SessionOpen, {
        sessionId,
        cwd: tls.daemon.dir,
        sandbox: { mode, workspaceRoot: tls.daemon.dir },
      });
      for (const path of secrets) {
        const error = await rejection(client.fs.read({ sessionId, path }));
        expect(error.errorName, `${mode} ${path}`).toBe('FS_DENIED');
        expect(error.message).toMatch(/secret file/);
      }
    }
  });

  it('a hard link to the token placed in the workspace is refused by inode; a link to an ordinary file reads', async () => {
    const { client, workspace, sessionId, daemon } = await fsFixture('read-only');
    linkSync(join(daemon.stateDir, 'token'), join(workspace, 'innocent.txt'));
    const error = await rejection(client.fs.read({ sessionId, path: 'innocent.txt' }));
    expect(error.errorName).toBe('FS_DENIED');
    expect(error.message).toMatch(/hard link to a file of the daemon/);
    const download = await rejection(
      client.fs.download(join(daemon.dir, 'copy'), join(workspace, 'innocent.txt'), { sessionId }),
    );
    expect(download.errorName).toBe('FS_DENIED');
    // Hard links are common (package stores): one to a file no rule hides reads as any file.
    writeFileSync(join(daemon.dir, 'plain'), 'plain text');
    linkSync(join(daemon.dir, 'plain'), join(workspace, 'plain-link'));
    const read = await client.fs.read({ sessionId, path: 'plain-link' });
    expect(Buffer.from(read.data, 'base64').toString()).toBe('plain text');
  });

  it('workspace-write: an append through a hard link to a file outside the workspace is refused', async () => {
    const { client, workspace, sessionId, daemon } = await fsFixture('workspace-write');
    const outside = join(daemon.dir, 'outside.rc');
    writeFileSync(outside, 'original\n');
    linkSync(outside, join(workspace, 'looks-local'));
    const error = await rejection(
      client.fs.write({ sessionId, path: 'looks-local', data: b64('evil\n'), append: true }),
    );
    expect(error.errorName).toBe('FS_DENIED');
    expect(error.message).toMatch(/more than one link/);
    expect(readFileSync(outside, 'utf8')).toBe('original\n');
    // A replace makes a new inode: the workspace name changes, the outside file does not.
    await client.fs.write({ sessionId, path: 'looks-local', data: b64('replaced\n') });
    expect(readFileSync(outside, 'utf8')).toBe('original\n');
    expect(readFileSync(join(workspace, 'looks-local'), 'utf8')).toBe('replaced\n');
  });

  it.skipIf(!IS_ROOT)(
    "a root daemon's confined session cannot read another user's 0600 file; danger-full-access can (needs root)",
    async () => {
      const { client, daemon } = await fsFixture('read-only');
      const dir = join(daemon.dir, 'home');
      mkdirSync(dir, { mode: 0o755 });
      const secret = join(dir, 'secret');
      writeFileSync(secret, 'private', { mode: 0o600 });
      chownSync(secret, 1000, 1000);
      for (const mode of ['read-only', 'workspace-write'] as const) {
        const sessionId = `c-${mode}`;
        await client.call(SessionOpen, { sessionId, cwd: daemon.dir, sandbox: { mode, workspaceRoot: daemon.dir } });
        const error = await rejection(client.fs.read({ sessionId, path: secret }));
        expect(error.errorName, mode).toBe('FS_DENIED');
        expect(error.message).toMatch(/does not let a confined command read it/);
      }
      // A root-owned 0600 file is the owner's: readable.
      writeFileSync(join(dir, 'own'), 'mine', { mode: 0o600 });
      expect((await client.fs.read({ sessionId: 'c-read-only', path: join(dir, 'own') })).bytes).toBe(4);
      await client.call(SessionOpen, { sessionId: 'full', cwd: daemon.dir, sandbox: { mode: 'danger-full-access' } });
      const read = await client.fs.read({ sessionId: 'full', path: secret });
      expect(Buffer.from(read.data, 'base64').toString()).toBe('private');
    },
  );
});
