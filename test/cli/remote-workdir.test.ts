/**
 * The CLI over `EXECD_URL` speaks to a daemon whose files are not the client's: it sends no local
 * cwd as the workdir, a session it creates gets the daemon's cwd, and a refused call leaves no
 * session behind.
 */
import { mkdirSync } from 'node:fs';
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
    const admin = await target.daemon.connect();
    const sessions = (await admin.call(DaemonStatus, {})).sessions.map((session) => [session.sessionId, session.cwd]);
    expect(sessions.sort()).toEqual([
      ['cli', '/'],
      ['s2', '/'],
    ]);
  });
});
