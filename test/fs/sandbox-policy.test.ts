import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { ExecdClient } from '../../client/connection.js';
import { SessionOpen, ShellRun } from '../../protocol/methods.js';
import { SANDBOX_MODES } from '../../protocol/sandbox.js';
import { rejection } from '../helpers/rejection.js';
import { b64, fsFixture, snapshot } from './helpers.js';

/** Every write method once at `path` (a second path for move); each must be refused. */
function everyWrite(client: ExecdClient, sessionId: string, path: string, other: string): Array<Promise<unknown>> {
  return [
    client.fs.write({ sessionId, path, data: b64('x') }),
    client.fs.write({ sessionId, path, data: b64('x'), append: true }),
    client.fs.write({ sessionId, path: join(path, 'deep/f'), data: b64('x'), createParents: true }),
    client.fs.mkdir({ sessionId, path: join(path, 'dir'), parents: true }),
    client.fs.remove({ sessionId, path, recursive: true }),
    client.fs.move({ sessionId, from: path, to: other, overwrite: true }),
    client.fs.move({ sessionId, from: other, to: path, overwrite: true }),
    client.fs.upload(join(other), path, { sessionId }),
  ];
}

describe('file methods under the sandbox policy', () => {
  it('read-only refuses every write, naming the path and the rule, and changes nothing', async () => {
    const { client, workspace, sessionId, daemon } = await fsFixture('read-only');
    writeFileSync(join(workspace, 'f'), 'keep');
    writeFileSync(join(workspace, 'g'), 'other');
    const before = snapshot(daemon.dir);
    for (const refused of everyWrite(client, sessionId, join(workspace, 'f'), join(workspace, 'g')).map(rejection)) {
      const error = await refused;
      expect(error.errorName, error.message).toBe('FS_DENIED');
      expect(error.message).toMatch(/read-only sandbox refuses every write/);
      expect(error.message).toContain(workspace);
    }
    expect(snapshot(daemon.dir)).toBe(before);
    expect(Buffer.from((await client.fs.read({ sessionId, path: 'f' })).data, 'base64').toString()).toBe('keep');
  });

  it('workspace-write refuses writes outside the workspace: absolute, .., symlink out', async () => {
    const { client, workspace, sessionId, daemon } = await fsFixture('workspace-write');
    const outside = join(daemon.dir, 'outside');
    mkdirSync(outside);
    writeFileSync(join(outside, 'victim'), 'untouched');
    writeFileSync(join(workspace, 'mine'), 'mine');
    symlinkSync(outside, join(workspace, 'out-dir'));
    symlinkSync(join(outside, 'victim'), join(workspace, 'out-file'));
    const before = snapshot(outside);
    const targets = [
      join(outside, 'victim'),
      '../outside/victim',
      'out-dir/victim',
      'out-dir/new',
      'sub/../../outside/x',
    ];
    for (const target of targets) {
      for (const refused of everyWrite(client, sessionId, target, join(workspace, 'mine')).map(rejection)) {
        const error = await refused;
        expect(['FS_DENIED', 'FS_NOT_FOUND', 'FS_NOT_A_DIRECTORY'], `${target}: ${error.message}`).toContain(
          error.errorName,
        );
        if (error.errorName === 'FS_DENIED') expect(error.message).toMatch(/outside the workspace root|symlink/);
      }
    }
    // Appending through a symlinked last component is refused; replacing it replaces the link only.
    expect(
      (await rejection(client.fs.write({ sessionId, path: 'out-file', data: b64('x'), append: true }))).errorName,
    ).toBe('FS_DENIED');
    await client.fs.write({ sessionId, path: 'out-file', data: b64('replaced') });
    expect(readFileSync(join(workspace, 'out-file'), 'utf8')).toBe('replaced');
    expect(snapshot(outside)).toBe(before);
    // Inside the workspace every write works.
    await client.fs.write({ sessionId, path: 'in/deep/f', data: b64('ok'), createParents: true });
    expect(readFileSync(join(workspace, 'in/deep/f'), 'utf8')).toBe('ok');
  });

  it('a symlink swapped in between check and use never lets a write out (raced in a loop)', async () => {
    const { client, workspace, sessionId, daemon } = await fsFixture('workspace-write');
    const outside = join(daemon.dir, 'outside');
    mkdirSync(outside);
    mkdirSync(join(workspace, 'real'));
    writeFileSync(join(outside, 'victim'), 'untouched');
    symlinkSync('real', join(workspace, 'd'));
    // Another process flips ws/d between ws/real and the outside directory, and ws/f between a
    // file and a symlink to the victim, as fast as it can, while the daemon writes through them.
    const swapper = spawn(
      'bash',
      [
        '-c',
        `cd "$1"; while :; do ln -sfn real d.tmp; mv -T d.tmp d; ln -sfn "$2" d.tmp; mv -T d.tmp d;
         echo file > f.tmp; mv -T f.tmp f; ln -sfn "$2/victim" f.tmp; mv -T f.tmp f; done`,
        'swapper',
        workspace,
        outside,
      ],
      { stdio: 'ignore' },
    );
    onTestFinished(() => {
      swapper.kill('SIGKILL');
    });
    let landed = 0;
    let refused = 0;
    const rounds = 300;
    for (let i = 0; i < rounds; i++) {
      const calls = [
        client.fs.write({ sessionId, path: `d/w${i}`, data: b64('x') }),
        client.fs.write({ sessionId, path: 'd/appended', data: b64('x'), append: true }),
        client.fs.mkdir({ sessionId, path: `d/m${i}` }),
        client.fs.write({ sessionId, path: 'f', data: b64('x'), append: true }),
        client.fs.write({ sessionId, path: 'f', data: b64('y') }),
      ];
      for (const outcome of await Promise.allSettled(calls)) {
        if (outcome.status === 'fulfilled') landed++;
        else refused++;
      }
    }
    swapper.kill('SIGKILL');
    console.log(`swap race: ${rounds * 5} writes, ${landed} landed inside, ${refused} refused`);
    expect(readdirSync(outside)).toEqual(['victim']);
    expect(readFileSync(join(outside, 'victim'), 'utf8')).toBe('untouched');
    expect(landed).toBeGreaterThan(0);
  });

  it('the token, state dir and socket directory are unreachable in every mode', async () => {
    for (const mode of SANDBOX_MODES) {
      const { client, workspace, sessionId, daemon } = await fsFixture(mode);
      symlinkSync(join(daemon.stateDir, 'token'), join(workspace, 'token-link'));
      symlinkSync(daemon.stateDir, join(workspace, 'state-link'));
      const token = join(daemon.stateDir, 'token');
      const reads = [
        client.fs.read({ sessionId, path: token }),
        client.fs.read({ sessionId, path: 'token-link' }),
        client.fs.read({ sessionId, path: 'state-link/token' }),
        client.fs.read({ sessionId, path: `../state/token` }),
        client.fs.stat({ sessionId, path: token }),
        client.fs.list({ sessionId, path: daemon.stateDir }),
        client.fs.list({ sessionId, path: 'state-link' }),
        client.fs.download(join(workspace, 'stolen'), token, { sessionId }),
        client.fs.watch({ sessionId, path: daemon.stateDir }, () => {}),
        client.fs.read({ sessionId, path: daemon.socketPath }),
        client.fs.write({ sessionId, path: token, data: b64('x') }),
        client.fs.remove({ sessionId, path: daemon.dir, recursive: true }),
      ];
      for (const refused of reads.map(rejection)) {
        const error = await refused;
        expect(error.errorName, `${mode}: ${error.message}`).toBe('FS_DENIED');
      }
      const listing = await client.fs.list({ sessionId, path: daemon.dir, depth: 3 });
      expect(listing.entries.some((entry) => entry.path.startsWith(daemon.stateDir))).toBe(false);
      expect(readFileSync(token, 'utf8')).toMatch(/^[0-9a-f]{64}$/);
    }
  });

  it("another session's spill file is unreadable", async () => {
    const { client, sessionId, daemon } = await fsFixture('danger-full-access');
    const other = await daemon.connect();
    await other.call(SessionOpen, { sessionId: 'other', cwd: daemon.dir });
    const run = await other.call(ShellRun, { sessionId: 'other', command: 'seq 1 100000', stdoutMaxBytes: 1000 });
    const spill = run.stdout.spillPath!;
    expect(spill).toBeTruthy();
    const error = await rejection(client.fs.read({ sessionId, path: spill }));
    expect(error.errorName).toBe('FS_DENIED');
    expect(error.message).toContain(spill);
  });
});
