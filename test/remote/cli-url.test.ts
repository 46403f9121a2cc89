/** The CLI against a daemon reached by URL: EXECD_URL, EXECD_TOKEN, EXECD_CA, EXECD_CERT/KEY. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliWorld } from '../helpers/cli.js';
import { startTlsDaemon } from './loopback-tls.js';
import { makeCa, makeCert } from './pki.js';

describe('execd with EXECD_URL', () => {
  it('runs commands and shows the status of a daemon over TLS with a client certificate', async () => {
    const target = await startTlsDaemon({ clientCa: true });
    const world = cliWorld({
      env: {
        EXECD_URL: target.url,
        EXECD_CA: target.ca.cert,
        EXECD_CERT: target.client.cert,
        EXECD_KEY: target.client.key,
        EXECD_KEEPALIVE_MS: '5000',
      },
    });
    // cliWorld drops EXECD_TOKEN from its base environment; each run passes it.
    const withToken = { env: { EXECD_TOKEN: target.token } };
    const run = await world.run(['run', '--', 'echo remote; pwd'], withToken);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(/^remote\n/);
    const status = await world.run(['status'], withToken);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`^socket +${target.url}$`, 'm'));
    expect(status.stdout).toMatch(new RegExp(`^pid +${target.daemon.pid}$`, 'm'));
    expect(status.stdout).toMatch(/^state dir +\(on the daemon host\)$/m);
    // Nothing was started on the local endpoint.
    expect(existsSync(join(world.stateDir, 'token'))).toBe(false);
  });

  it('fails on one line without a token, a readable CA or a daemon, and never starts one', async () => {
    const target = await startTlsDaemon();
    const world = cliWorld({ env: { EXECD_URL: target.url, EXECD_CA: target.ca.cert } });
    const noToken = await world.run(['run', '--', 'true'], { env: { EXECD_TOKEN: '' } });
    expect(noToken).toMatchObject({ code: 125 });
    expect(noToken.stderr).toMatch(
      /^execd run: connecting to tls:\/\/127\.0\.0\.1:\d+ needs a token \(or EXECD_TOKEN\)\n$/,
    );
    const noCa = await world.run(['run', '--', 'true'], {
      env: { EXECD_TOKEN: target.token, EXECD_CA: join(world.dir, 'missing.crt') },
    });
    expect(noCa).toMatchObject({ code: 125 });
    expect(noCa.stderr).toMatch(/^execd: cannot read EXECD_CA .*missing\.crt: ENOENT\n$/);
    await target.daemon.stop();
    const gone = await world.run(['run', '--', 'true'], { env: { EXECD_TOKEN: target.token } });
    expect(gone).toMatchObject({ code: 125 });
    expect(gone.stderr).toMatch(/^execd run: no execd daemon at tls:\/\/127\.0\.0\.1:\d+ \(connect ECONNREFUSED/);
    expect(existsSync(join(world.stateDir, 'token'))).toBe(false);
  });

  it('serve --detach keeps relative TLS paths working (the daemon runs in /)', async () => {
    const world = cliWorld();
    const ca = makeCa(world.dir, 'ca');
    makeCert(world.dir, ca, 'server', ['127.0.0.1']);
    const started = await world.run(
      ['serve', '--detach', '--listen', 'tls://127.0.0.1:0', '--tls-cert', 'server.crt', '--tls-key', 'server.key'],
      { cwd: world.dir },
    );
    expect(started).toMatchObject({ code: 0, stderr: '' });
    const log = readFileSync(join(world.stateDir, 'execd.log'), 'utf8');
    const url = /"listen":\["(tls:\/\/127\.0\.0\.1:\d+)"\]/.exec(log)![1]!;
    const token = readFileSync(join(world.stateDir, 'token'), 'utf8').trim();
    const status = await world.run(['status'], { env: { EXECD_URL: url, EXECD_TOKEN: token, EXECD_CA: ca.cert } });
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`^socket +${url}$`, 'm'));
  });
});
