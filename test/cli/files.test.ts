import {
  chmodSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
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
    // A copy never creates its session: a run does.
    expect((await world.run(['run', '--', 'true'], withToken)).code).toBe(0);
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

  it('a look or a copy never creates a session: a missing one is an error naming it', async () => {
    const world = cliWorld();
    const local = join(world.dir, 'file.txt');
    writeFileSync(local, 'x');
    const attempts = [
      ['ls', '--session', 'typo', ':/tmp'],
      ['cat', 'typo:/etc/hostname'],
      ['cp', local, 'typo:/tmp/execd-never-written'],
      ['cp', '--session', 'typo', ':/etc/hostname', join(world.dir, 'copy')],
    ];
    for (const args of attempts) {
      const result = await world.run(args);
      expect(result.code, args.join(' ')).toBe(125);
      expect(result.stderr).toBe(
        `execd ${args[0]}: no session typo in the daemon (execd run, execd start or a harness create one)\n`,
      );
    }
    const sessions = await world.run(['session', 'list']);
    expect(sessions.stdout).not.toContain('typo');
    expect(sessions.stdout).not.toContain('cli');
  });

  it('keeps symlinks, hard links and modes of a tree and the mode of a file, up and down; -L uploads link targets', async () => {
    const target = await startTlsDaemon();
    const world = cliWorld({ env: { EXECD_URL: target.url, EXECD_CA: target.ca.cert } });
    const withToken = { env: { EXECD_TOKEN: target.token }, cwd: world.dir };
    const local = join(world.dir, 'proj');
    mkdirSync(join(local, 'node_modules', '.bin'), { recursive: true });
    writeFileSync(join(local, 'tool.js'), '#!/usr/bin/env node\n');
    chmodSync(join(local, 'tool.js'), 0o755);
    writeFileSync(join(local, 'private'), 'p');
    chmodSync(join(local, 'private'), 0o600);
    linkSync(join(local, 'private'), join(local, 'private-link'));
    symlinkSync('../../tool.js', join(local, 'node_modules', '.bin', 'tool'));
    symlinkSync('/etc/passwd', join(local, 'passwd'));
    const remote = join(target.daemon.dir, 'proj');
    // A copy never creates its session: a run does.
    expect((await world.run(['run', '--', 'true'], withToken)).code).toBe(0);
    expect(await world.run(['cp', local, `:${remote}`], withToken)).toMatchObject({ code: 0, stderr: '' });
    expect(readlinkSync(join(remote, 'node_modules', '.bin', 'tool'))).toBe('../../tool.js');
    expect(readlinkSync(join(remote, 'passwd'))).toBe('/etc/passwd');
    expect(statSync(join(remote, 'tool.js')).mode & 0o777).toBe(0o755);
    expect(statSync(join(remote, 'private')).mode & 0o777).toBe(0o600);
    expect(statSync(join(remote, 'private')).ino).toBe(statSync(join(remote, 'private-link')).ino);

    // Copied again into the directory that holds it: the tree there is replaced whole.
    writeFileSync(join(remote, 'stale'), 'old');
    expect(await world.run(['cp', local, `:${target.daemon.dir}`], withToken)).toMatchObject({ code: 0 });
    expect(lstatSync(join(remote, 'stale'), { throwIfNoEntry: false })).toBeUndefined();

    const back = join(world.dir, 'back');
    expect(await world.run(['cp', `:${remote}`, back], withToken)).toMatchObject({ code: 0, stderr: '' });
    expect(readlinkSync(join(back, 'node_modules', '.bin', 'tool'))).toBe('../../tool.js');
    expect(readlinkSync(join(back, 'passwd'))).toBe('/etc/passwd');
    expect(statSync(join(back, 'tool.js')).mode & 0o777).toBe(0o755);
    expect(statSync(join(back, 'private')).mode & 0o777).toBe(0o600);
    expect(statSync(join(back, 'private')).ino).toBe(statSync(join(back, 'private-link')).ino);

    // A single file keeps its mode both ways.
    const script = join(world.dir, 'run.sh');
    writeFileSync(script, 'echo hi\n');
    chmodSync(script, 0o750);
    expect(await world.run(['cp', script, `:${remote}/run.sh`], withToken)).toMatchObject({ code: 0 });
    expect(statSync(join(remote, 'run.sh')).mode & 0o777).toBe(0o750);
    chmodSync(join(remote, 'run.sh'), 0o705);
    expect(await world.run(['cp', `:${remote}/run.sh`, join(world.dir, 'run-back.sh')], withToken)).toMatchObject({
      code: 0,
    });
    expect(statSync(join(world.dir, 'run-back.sh')).mode & 0o777).toBe(0o705);

    // -L: what the links point to, as files.
    const followed = join(target.daemon.dir, 'followed');
    expect(await world.run(['cp', '-L', local, `:${followed}`], withToken)).toMatchObject({ code: 0 });
    expect(lstatSync(join(followed, 'passwd')).isFile()).toBe(true);
    expect(readFileSync(join(followed, 'passwd'))).toEqual(readFileSync('/etc/passwd'));
    expect(lstatSync(join(followed, 'node_modules', '.bin', 'tool')).isFile()).toBe(true);
  }, 300_000);
});
