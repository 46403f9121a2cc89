/**
 * The CLI over `EXECD_URL` speaks to a daemon whose files are not the client's: it sends no local
 * cwd as the workdir, a session it creates gets the daemon's cwd, and a refused call leaves no
 * session behind.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DaemonStatus } from '../../protocol/methods.js';
import { cliWorld } from '../helpers/cli.js';
import { startTlsDaemon } from '../remote/loopback-tls.js';

describe('the CLI over EXECD_URL', () => {
  it('runs in the daemon-side cwd, never its own; a refused run leaves no session', async () => {
    const target = await startTlsDaemon({ config: { cwd: '/' } });
    const world = cliWorld({ env: { EXECD_URL: target.url, EXECD_CA: target.ca.cert } });
    // A directory that only the client has (on one machine in this test: the daemon never sees it named).
    const clientOnly = join(world.dir, 'client-only');
    mkdirSync(clientOnly);
    const options = { env: { EXECD_TOKEN: target.token }, cwd: clientOnly };

    const ran = await world.run(['run', '--', 'pwd'], options);
    expect(ran).toMatchObject({ code: 0, stdout: '/\n' });
    const started = await world.run(['start', '--session', 's2', '--', 'pwd'], options);
    expect(started.code).toBe(0);
    const read = await world.run(['wait', '--session', 's2', started.stdout.trim()], options);
    expect(read.code).toBe(0);
    const output = await world.run(['read', '--session', 's2', started.stdout.trim()], options);
    expect(output.stdout).toBe('/\n');
    // --workdir still says where, in the daemon's file system.
    const there = await world.run(['run', '--workdir', '/tmp', '--', 'pwd'], options);
    expect(there).toMatchObject({ code: 0, stdout: '/tmp\n' });

    const refused = await world.run(['run', '--session', 'typo', '--workdir', '/nonexistent', '--', 'true'], options);
    expect(refused.code).toBe(125);
    expect(refused.stderr).toContain('/nonexistent');
    // Every session is the admin's to list: without the admin token the CLI says so.
    const unlisted = await world.run(['session', 'list'], options);
    expect(unlisted).toMatchObject({
      code: 125,
      stderr:
        "execd session list: listing every session needs the daemon's admin token (for a daemon elsewhere: EXECD_ADMIN_TOKEN)\n",
    });
    const adminToken = readFileSync(join(target.daemon.stateDir, 'admin-token'), 'utf8').trim();
    const listed = await world.run(['session', 'list'], {
      ...options,
      env: { ...options.env, EXECD_ADMIN_TOKEN: adminToken },
    });
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain('s2');
    const admin = await target.daemon.connect();
    const sessions = (await admin.call(DaemonStatus, {})).sessions.map((session) => [session.sessionId, session.cwd]);
    expect(sessions.sort()).toEqual([
      ['cli', '/'],
      ['s2', '/'],
    ]);
  });

  it('takes the token from --token-file, checks the certificate against --servername, says a wrong CA is one, and wants EXECD_KEY with EXECD_CERT', async () => {
    const target = await startTlsDaemon();
    const world = cliWorld({ env: { EXECD_URL: target.url, EXECD_CA: target.ca.cert } });
    const tokenFile = join(world.dir, 'token');
    writeFileSync(tokenFile, `${target.token}\n`, { mode: 0o600 });
    const ran = await world.run(['--token-file', tokenFile, 'run', '--', 'echo through-the-file']);
    expect(ran).toMatchObject({ code: 0, stdout: 'through-the-file\n' });
    const fromEnv = await world.run(['run', '--', 'echo env'], { env: { EXECD_TOKEN_FILE: tokenFile } });
    expect(fromEnv).toMatchObject({ code: 0, stdout: 'env\n' });

    // The certificate names 127.0.0.1, not this name: the check uses the name given.
    const named = await world.run(['--servername', 'other.example', '--token-file', tokenFile, 'run', '--', 'true']);
    expect(named.code).toBe(125);
    expect(named.stderr).toContain('other.example');
    expect(named.stderr).toContain('presented a certificate this client does not trust');
    // A CA that did not sign the daemon's certificate reads as what it is, not as a missing daemon.
    const wrongCa = await world.run(['--token-file', tokenFile, 'run', '--', 'true'], {
      env: { EXECD_CA: target.client.cert },
    });
    expect(wrongCa.code).toBe(125);
    expect(wrongCa.stderr).toMatch(
      /^execd run: the daemon at tls:\/\/127\.0\.0\.1:\d+ presented a certificate this client does not trust: .*EXECD_CA/,
    );

    const halfPair = await world.run(['run', '--', 'true'], {
      env: { EXECD_TOKEN: target.token, EXECD_CERT: target.client.cert },
    });
    expect(halfPair).toMatchObject({
      code: 125,
      stderr: 'execd: EXECD_CERT is set but EXECD_KEY is not: a client certificate needs both files\n',
    });
  });
});
