/** `--help` on every subcommand; unknown subcommands and flags are one clear line (SPEC §4). */
import { describe, expect, it } from 'vitest';
import { cliWorld } from '../helpers/cli.js';

const SUBCOMMANDS = [
  'serve',
  'run',
  'start',
  'jobs',
  'read',
  'peek',
  'wait',
  'kill',
  'release',
  'attach',
  'status',
  'config',
  'stop',
];

describe('execd --help and usage errors', { timeout: 180_000 }, () => {
  it('lists every subcommand in `execd --help`', async () => {
    const world = cliWorld();
    const result = await world.run(['--help']);
    expect(result.code).toBe(0);
    for (const name of SUBCOMMANDS) expect(result.stdout).toMatch(new RegExp(`^  ${name} `, 'm'));
  });

  it('prints usage for `--help` on every subcommand, without starting a daemon', async () => {
    const world = cliWorld();
    const results = await Promise.all(SUBCOMMANDS.map((name) => world.run([name, '--help'])));
    results.forEach((result, i) => {
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(new RegExp(`^usage: execd ${SUBCOMMANDS[i]}\\b`));
      expect(result.stdout).toMatch(/^Examples?:/m);
      expect(result.stderr).toBe('');
    });
    expect(world.daemonPids()).toEqual([]);
  });

  it('prints usage for `execd term --help` and `--help` on every term subcommand, without starting a daemon', async () => {
    const world = cliWorld();
    const group = await world.run(['term', '--help']);
    expect(group.code).toBe(0);
    for (const name of ['open', 'list', 'send', 'read', 'close'])
      expect(group.stdout).toMatch(new RegExp(`^  ${name} `, 'm'));
    const results = await Promise.all(
      ['open', 'list', 'send', 'read', 'close'].map((name) => world.run(['term', name, '--help'])),
    );
    results.forEach((result, i) => {
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(
        new RegExp(`^usage: execd term ${['open', 'list', 'send', 'read', 'close'][i]}\\b`),
      );
      expect(result.stdout).toMatch(/^Examples?:/m);
    });
    const bad = await world.run(['term', 'bogus']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe("execd term: unknown subcommand 'bogus' (see 'execd term --help')\n");
    const badId = await world.run(['term', 'close', 'bash-1']);
    expect(badId.code).toBe(2);
    expect(badId.stderr).toBe(
      'execd term close: expected a terminal id such as term-1, got "bash-1" (see \'execd term close --help\')\n',
    );
    expect(world.daemonPids()).toEqual([]);
  });

  it('an unknown subcommand prints one line and exits 2', async () => {
    const world = cliWorld();
    const result = await world.run(['frobnicate']);
    expect(result).toMatchObject({ code: 2, stdout: '' });
    expect(result.stderr).toBe("execd: unknown command 'frobnicate' (run 'execd --help')\n");
  });

  it('an unknown flag on any subcommand prints one line and exits 2', async () => {
    const world = cliWorld();
    const results = await Promise.all(SUBCOMMANDS.map((name) => world.run([name, '--no-such-flag'])));
    results.forEach((result, i) => {
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(
        `execd ${SUBCOMMANDS[i]}: unknown option '--no-such-flag' (see 'execd ${SUBCOMMANDS[i]} --help')\n`,
      );
    });
    expect(world.daemonPids()).toEqual([]);
  });

  it('missing arguments are usage errors on one line; --help after -- belongs to the command', async () => {
    const world = cliWorld();
    for (const args of [['run'], ['start'], ['read'], ['wait', 'a', 'b'], ['run', '--timeout', '0', '--', 'true']]) {
      const result = await world.run(args);
      expect(result.code).toBe(2);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
    }
    const passed = await world.run(['run', '--', 'echo', '--help']);
    expect(passed).toMatchObject({ code: 0, stdout: '--help\n' });
  });
});
