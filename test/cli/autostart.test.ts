/**
 * Auto-start and daemon ownership through the built CLI: racing clients end with one daemon, a
 * stale socket or lock never blocks, a second daemon never takes a live one's socket, idle exit.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliWorld } from '../helpers/cli.js';
import { waitPidsGone } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';

describe('auto-start', { timeout: 180_000 }, () => {
  it('ten `execd run` started at once against a clean state dir leave exactly one daemon', async () => {
    const world = cliWorld();
    const runs = Array.from({ length: 10 }, (_, i) => world.run(['run', '--', `echo run-${i}`]));
    const results = await Promise.all(runs);
    results.forEach((result, i) => expect(result).toMatchObject({ code: 0, stdout: `run-${i}\n`, stderr: '' }));
    expect(world.daemonPids()).toHaveLength(1);
  });

  it('a stale socket file and stale locks of a crashed daemon do not block the next start', async () => {
    const world = cliWorld();
    expect((await world.run(['run', '--', 'echo one'])).stdout).toBe('one\n');
    const [first] = world.daemonPids();
    process.kill(first!, 'SIGKILL');
    expect(await waitPidsGone([first!])).toEqual([]);
    // The crash left the socket file and both ownership locks behind.
    expect(existsSync(world.socketPath)).toBe(true);
    expect(existsSync(`${world.socketPath}.lock`)).toBe(true);
    expect(existsSync(join(world.stateDir, 'daemon.lock'))).toBe(true);
    const again = await world.run(['run', '--', 'echo two']);
    expect(again).toMatchObject({ code: 0, stdout: 'two\n' });
    const daemons = world.daemonPids();
    expect(daemons).toHaveLength(1);
    expect(daemons[0]).not.toBe(first);
  });

  it('a socket file nobody listens on (left by another program) does not block', async () => {
    const world = cliWorld();
    mkdirSync(join(world.dir, 'run'), { mode: 0o700 });
    // A process that listens and is SIGKILLed leaves a socket file that refuses connections.
    const holder = spawn(process.execPath, [
      '-e',
      `require('net').createServer().listen(${JSON.stringify(world.socketPath)})`,
    ]);
    await waitFor(() => existsSync(world.socketPath), 'the foreign socket file');
    holder.kill('SIGKILL');
    await new Promise((resolve) => holder.once('exit', resolve));
    expect(existsSync(world.socketPath)).toBe(true);
    expect(await world.run(['run', '--', 'echo ok'])).toMatchObject({ code: 0, stdout: 'ok\n' });
  });

  it('a lock naming a live process that is not its holder (a reused pid) is stale', async () => {
    const world = cliWorld();
    mkdirSync(world.stateDir, { recursive: true, mode: 0o700 });
    // Our own pid with a start time it never had: the pid was "reused".
    const fake = JSON.stringify({ pid: process.pid, startTime: 1 });
    writeFileSync(join(world.stateDir, 'daemon.lock'), fake, { mode: 0o600 });
    writeFileSync(join(world.stateDir, 'autostart.lock'), fake, { mode: 0o600 });
    expect(await world.run(['run', '--', 'echo ok'])).toMatchObject({ code: 0, stdout: 'ok\n' });
  });

  it('two daemons started at once on one socket: one serves, the other refuses and leaves its socket alone', async () => {
    const world = cliWorld();
    const serve = () => world.spawn(['serve', '--socket', world.socketPath, '--state-dir', world.stateDir]);
    const [a, b] = [serve(), serve()];
    const loser = await Promise.race([a.done, b.done]);
    expect(loser.code).toBe(125);
    expect(loser.stderr).toMatch(
      /^execd serve: another execd \(pid \d+\) already owns the (state directory|socket) .*\n$/,
    );
    expect(world.daemonPids()).toHaveLength(1);
    expect(await world.run(['run', '--', 'echo still-served'])).toMatchObject({ code: 0, stdout: 'still-served\n' });
    expect(world.daemonPids()).toHaveLength(1);
  });

  it('a socket paired with a state dir another daemon owns fails at once, naming the owner', async () => {
    const world = cliWorld();
    expect((await world.run(['serve', '--detach'])).code).toBe(0);
    const [owner] = world.daemonPids();
    const otherSocket = join(world.dir, 'other.sock');
    const startedAt = Date.now();
    const result = await world.run(['run', '--', 'true'], { env: { EXECD_SOCKET: otherSocket } });
    const elapsedMs = Date.now() - startedAt;
    console.log(`wrong socket/state-dir pairing answered in ${elapsedMs} ms`);
    expect(result.code).toBe(125);
    expect(result.stderr).toBe(
      `execd: another execd (pid ${owner}) already owns the state directory ${world.stateDir}; it does not serve ${otherSocket} (give the --socket it was started with, or another --state-dir)\n`,
    );
    expect(elapsedMs).toBeLessThan(10_000);
    expect(world.daemonPids()).toEqual([owner]);
  });

  it('`serve --detach` returns once the daemon listens; a second one says it already runs and exits 0', async () => {
    const world = cliWorld();
    const first = await world.run(['serve', '--detach']);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^execd daemon started \(pid \d+\) on .*; log: .*execd\.log\n$/);
    expect(existsSync(world.socketPath)).toBe(true);
    const second = await world.run(['serve', '--detach']);
    expect(second).toMatchObject({ code: 0, stderr: '' });
    expect(second.stdout).toMatch(/^execd daemon already running \(pid \d+\) on .*; nothing started\n$/);
    expect(world.daemonPids()).toHaveLength(1);
  });

  it('an auto-started daemon exits by itself once idle (EXECD_IDLE_EXIT_MS)', async () => {
    const world = cliWorld({ env: { EXECD_IDLE_EXIT_MS: '1000' } });
    expect((await world.run(['run', '--', 'echo ok'])).stdout).toBe('ok\n');
    const log = join(world.stateDir, 'execd.log');
    await waitFor(() => readFileSync(log, 'utf8').includes('"msg":"shut down"'), 'the idle daemon to shut down', {
      timeoutMs: 60_000,
    });
    expect(readFileSync(log, 'utf8')).toContain('"reason":"idle"');
    expect(await waitPidsGone(world.daemonPids())).toEqual([]);
    expect(existsSync(world.socketPath)).toBe(false);
  });
});
