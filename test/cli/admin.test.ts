/** `execd status`, `config get/set` and `stop` through the built CLI (SPEC §4). */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { DaemonStatusResult } from '../../protocol/types.js';
import { cliWorld } from '../helpers/cli.js';
import { waitPidsGone } from '../helpers/daemon.js';

describe('execd status', { timeout: 180_000 }, () => {
  it('shows the real daemon: pid, the cli session, counts; --json the whole result', async () => {
    const world = cliWorld();
    await world.run(['run', '--', 'true']);
    const [pid] = world.daemonPids();
    const table = await world.run(['status']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(new RegExp(`^pid +${pid}$`, 'm'));
    expect(table.stdout).toMatch(new RegExp(`^socket +${world.socketPath}$`, 'm'));
    expect(table.stdout).toMatch(/^spawns +1 in the daemon, 0 by its spawner process$/m);
    // The sandbox runner bwrap works here: `auto` took it and the line says what it enforces.
    expect(table.stdout).toMatch(
      /^sandbox runner +bwrap, enforces files, daemon-files, daemon-socket, processes, network-off$/m,
    );
    expect(table.stdout).toMatch(/^SESSION +CONNECTIONS +RUNNING JOBS +TERMINALS +CWD$/m);
    expect(table.stdout).toMatch(new RegExp(`^cli +0 +0 +0 +${world.dir}$`, 'm'));
    expect(table.stdout).toMatch(
      new RegExp(`^memory \\(daemon\\) +[\\d.]+ MiB PSS, [\\d.]+ MiB RSS \\(pid ${pid}\\)$`, 'm'),
    );
    const json = JSON.parse((await world.run(['status', '--json'])).stdout) as DaemonStatusResult;
    expect(json).toMatchObject({ pid, version: '0.1.0', config: { timeoutMs: 120000 }, sandbox: { backend: 'bwrap' } });
    // The first run started the spawner process: the daemon and that helper, each read from /proc.
    expect(json.memory.map((use) => use.role).sort()).toEqual(['daemon', 'spawner']);
    for (const use of json.memory) {
      expect(use.pssBytes).toBeGreaterThan(1024 * 1024);
      expect(use.pssBytes).toBeLessThanOrEqual(use.rssBytes);
    }
    console.log(
      `status memory: ${json.memory.map((use) => `${use.role} ${(use.pssBytes / 2 ** 20).toFixed(1)} MiB PSS`).join(', ')}`,
    );
  });

  it('does not start a daemon: exits 3 with one line when none runs', async () => {
    const world = cliWorld();
    const result = await world.run(['status']);
    expect(result).toMatchObject({ code: 3, stdout: '' });
    expect(result.stderr).toBe(`execd status: not running (no daemon listening on ${world.socketPath})\n`);
    expect(world.daemonPids()).toEqual([]);
  });
});

describe('execd config', { timeout: 180_000 }, () => {
  it('get shows real values; set changes them for the next command', async () => {
    const world = cliWorld();
    expect((await world.run(['config', 'get', 'timeoutMs'])).stdout).toBe('120000\n');
    const all = await world.run(['config', 'get']);
    expect(all.stdout).toMatch(/^graceMs +3000$/m);
    expect(all.stdout).toMatch(/^cwd +\(unset\)$/m);
    const set = await world.run(['config', 'set', 'timeoutMs=400', 'graceMs=1000']);
    expect(set).toMatchObject({ code: 0, stdout: 'KEY        VALUE\ntimeoutMs  400\ngraceMs    1000\n' });
    expect((await world.run(['config', 'get', 'timeoutMs'])).stdout).toBe('400\n');
    const run = await world.run(['run', '--', 'sleep 30']);
    expect(run.code).toBe(124);
    expect(run.stderr).toContain('[timed out after 400ms]');
    expect(JSON.parse((await world.run(['config', 'get', '--json'])).stdout)).toMatchObject({
      timeoutMs: 400,
      graceMs: 1000,
    });
  });

  it('set refuses a bad value with one line naming the field, and changes nothing', async () => {
    const world = cliWorld();
    const bad = await world.run(['config', 'set', 'timeoutMs=5000', 'graceMs=-1']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad.stderr).toContain('graceMs');
    expect((await world.run(['config', 'get', 'timeoutMs'])).stdout).toBe('120000\n');
    const unknown = await world.run(['config', 'set', 'noSuchKey=1']);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('noSuchKey');
  });

  it('get of an unknown key and a missing action are usage errors (exit 2)', async () => {
    const world = cliWorld();
    expect(await world.run(['config', 'get', 'nope'])).toMatchObject({ code: 2 });
    expect(await world.run(['config'])).toMatchObject({ code: 2 });
    expect(await world.run(['config', 'set'])).toMatchObject({ code: 2 });
  });
});

describe('execd stop', { timeout: 180_000 }, () => {
  it('shuts the daemon down gracefully: the process exits and the socket is gone', async () => {
    const world = cliWorld();
    await world.run(['run', '--', 'true']);
    const daemons = world.daemonPids();
    expect(daemons).toHaveLength(1);
    const stop = await world.run(['stop']);
    expect(stop).toMatchObject({ code: 0, stdout: `execd daemon stopped (pid ${daemons[0]})\n` });
    expect(existsSync(world.socketPath)).toBe(false);
    expect(await waitPidsGone(daemons)).toEqual([]);
  });

  it('with no daemon running says so and exits 0 without starting one', async () => {
    const world = cliWorld();
    const stop = await world.run(['stop']);
    expect(stop).toMatchObject({ code: 0, stdout: '' });
    expect(stop.stderr).toContain('not running');
    expect(world.daemonPids()).toEqual([]);
  });
});
