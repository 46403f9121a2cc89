import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseDaemonPath } from '../../client/cli/daemon-path.js';
import { cliWorld } from '../helpers/cli.js';
import { startTlsDaemon } from '../remote/loopback-tls.js';

describe('execd cp, ls, cat', () => {
  it('names the daemon side :PATH or SESSION:PATH', () => {
    expect(parseDaemonPath(':/tmp/x', 'cli')).toEqual({ sessionId: 'cli', path: '/tmp/x' });
    expect(parseDaemonPath('agent-1:src', 'cli')).toEqual({ sessionId: 'agent-1', path: 'src' });
    expect(parseDaemonPath('./a:b', 'cli')).toBeUndefined();
    expect(parseDaemonPath('/a:b', 'cli')).toBeUndefined();
    expect(parseDaemonPath('plain', 'cli')).toBeUndefined();
  });

  it('copies a file and a directory tree both ways over EXECD_URL (TLS), lists and cats, exit 0; piped: no progress', async () => {
    const target = await startTlsDaemon();
    const world = cliWorld({ env: { EXECD_URL: target.url, EXECD_CA: target.ca.cert } });
    const withToken = { env: { EXECD_TOKEN: target.token }, cwd: world.dir };
    const local = join(world.dir, 'tree');
    mkdirSync(join(local, 'sub'), { recursive: true });
    writeFileSync(join(local, 'a.txt'), 'alpha');
    writeFileSync(join(local, 'sub', 'b.bin'), Buffer.alloc(3 * 1024 * 1024, 9));
    const remoteDir = join(target.daemon.dir, 'remote');
    const up = await world.run(['cp', local, `:${remoteDir}`], withToken);
    expect(up).toMatchObject({ code: 0, stderr: '' });
    expect(readFileSync(join(remoteDir, 'sub', 'b.bin')).equals(Buffer.alloc(3 * 1024 * 1024, 9))).toBe(true);
    const ls = await world.run(['ls', '--depth', '2', `:${remoteDir}`], withToken);
    expect(ls.stdout.split('\n').filter(Boolean)).toEqual([
      `${remoteDir}/a.txt`,
      `${remoteDir}/sub/`,
      `${remoteDir}/sub/b.bin`,
    ]);
    const cat = await world.run(['cat', `:${remoteDir}/a.txt`], withToken);
    expect(cat).toMatchObject({ code: 0, stdout: 'alpha' });
    const back = join(world.dir, 'back');
    const down = await world.run(['cp', `cli:${remoteDir}`, back], withToken);
    expect(down).toMatchObject({ code: 0, stderr: '' });
    expect(readFileSync(join(back, 'a.txt'), 'utf8')).toBe('alpha');
    expect(readFileSync(join(back, 'sub', 'b.bin')).equals(Buffer.alloc(3 * 1024 * 1024, 9))).toBe(true);
    const missing = await world.run(['cp', ':/nonexistent/file', join(world.dir, 'x')], withToken);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/FS_NOT_FOUND|no such file/);
  }, 300_000);
});
