/** One clear line and the right exit code for what a person types wrong, and for a job that failed at start. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliWorld } from '../helpers/cli.js';

describe('CLI messages', { timeout: 120_000 }, () => {
  it('config set: an unknown key and a pair without = are usage errors naming the subcommand', async () => {
    const world = cliWorld();
    expect(await world.run(['config', 'set', 'bogus=1'])).toMatchObject({
      code: 2,
      stderr: `execd config: unknown key "bogus" (see 'execd config --help')\n`,
    });
    expect(await world.run(['config', 'set', 'timeoutMs'])).toMatchObject({
      code: 2,
      stderr: `execd config: expected KEY=VALUE, got "timeoutMs" (see 'execd config --help')\n`,
    });
    expect(await world.run(['serve', '--config', 'bogus=1'])).toMatchObject({
      code: 2,
      stderr: `execd serve: unknown key "bogus" (see 'execd serve --help')\n`,
    });
  });

  it('config set cwd= unsets cwd', async () => {
    const world = cliWorld();
    expect((await world.run(['config', 'set', `cwd=${world.dir}`])).code).toBe(0);
    expect((await world.run(['config', 'get', 'cwd'])).stdout).toBe(`${world.dir}\n`);
    expect(await world.run(['config', 'set', 'cwd='])).toMatchObject({ code: 0, stdout: 'KEY  VALUE\ncwd  (unset)\n' });
    expect((await world.run(['config', 'get', 'cwd'])).stdout).toBe('(unset)\n');
    expect(JSON.parse((await world.run(['config', 'get', '--json'])).stdout)).not.toHaveProperty('cwd');
  });

  it('--timeout -5 says the value must be positive; read of a malformed job id exits 2', async () => {
    const world = cliWorld();
    expect(await world.run(['run', '--timeout', '-5', '--', 'true'])).toMatchObject({
      code: 2,
      stderr: `execd run: --timeout must be a positive number of milliseconds, got "-5" (see 'execd run --help')\n`,
    });
    expect(await world.run(['read', 'nonsense'])).toMatchObject({
      code: 2,
      stderr: `execd read: "nonsense" is not a job id (expected one such as bash-1) (see 'execd read --help')\n`,
    });
    expect((await world.run(['wait', 'nonsense'])).code).toBe(2);
  });

  it('--version prints the package version; run --render ends with a newline', async () => {
    const world = cliWorld();
    const { version } = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as {
      version: string;
    };
    expect(await world.run(['--version'])).toMatchObject({ code: 0, stdout: `execd ${version}\n`, stderr: '' });
    expect(await world.run(['run', '--render', '--', 'true'])).toMatchObject({ code: 0, stdout: '(no output)\n' });
    expect(await world.run(['run', '--render', '--', 'printf x; exit 3'])).toMatchObject({
      code: 3,
      stdout: 'x\n[exit code: 3]\n',
    });
    expect(await world.run(['run', '--render', '--', 'echo hi'])).toMatchObject({ code: 0, stdout: 'hi\n' });
  });

  it('start and read of a job that cannot start print why it failed and exit 125', async () => {
    const world = cliWorld();
    const result = await world.run(['start', '--workdir', '/does/not/exist', '--', 'true']);
    expect(result.code).toBe(125);
    expect(result.stdout).toMatch(/^bash-\d+\n$/);
    const jobId = result.stdout.trim();
    expect(result.stderr).toBe(
      `execd start: job ${jobId} failed: spawn failed: workdir does not exist: /does/not/exist\n`,
    );
    // A read of it says the same and fails too, as `read --follow` does.
    for (const args of [
      ['read', jobId],
      ['read', '--follow', jobId],
    ]) {
      expect(await world.run(args)).toMatchObject({
        code: 125,
        stdout: '',
        stderr: `[job ${jobId}: failed (spawn failed: workdir does not exist: /does/not/exist)]\n`,
      });
    }
    const good = await world.run(['start', '--', 'true']);
    expect(good).toMatchObject({ code: 0, stderr: '' });
  });
});
