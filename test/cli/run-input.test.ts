/**
 * What `execd run` gives the command: the caller's piped stdin, `--env` variables (otherwise the
 * daemon's environment), and several words after `--` as an argv, each word as typed.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliWorld } from '../helpers/cli.js';
import { runShell } from '../helpers/cli-shell.js';

describe('execd run input', { timeout: 120_000 }, () => {
  it('forwards piped stdin; --no-stdin and a /dev/null stdin give the command an empty one', async () => {
    const world = cliWorld();
    expect(await runShell(world, 'echo piped | $EXECD run -- cat')).toMatchObject({ code: 0, stdout: 'piped\n' });
    const lines = await runShell(world, `printf 'a\\nb\\nc\\n' | $EXECD run -- 'wc -l'`);
    expect(lines.stdout.trim()).toBe('3');
    expect(await runShell(world, 'echo piped | $EXECD run --no-stdin -- cat; echo "rc=$?"')).toMatchObject({
      stdout: 'rc=0\n',
    });
    expect(await runShell(world, '$EXECD run -- cat </dev/null; echo "rc=$?"')).toMatchObject({ stdout: 'rc=0\n' });
    // Neither a pipe nor a file: nothing is forwarded, the command's stdin is the daemon's /dev/null.
    expect(await runShell(world, "$EXECD run -- 'readlink /proc/self/fd/0' </dev/null")).toMatchObject({
      stdout: '/dev/null\n',
    });
    expect(await runShell(world, 'echo "from a file" >in.txt; $EXECD run -- cat <in.txt')).toMatchObject({
      stdout: 'from a file\n',
    });
  });

  it('streams stdin with no size cap: more than maxStdinBytes arrives whole, an endless one ends with the command', async () => {
    const world = cliWorld();
    expect((await world.run(['config', 'set', 'maxStdinBytes=1000'])).code).toBe(0);
    expect(await runShell(world, 'head -c 300000 /dev/zero | $EXECD run -- wc -c')).toMatchObject({
      code: 0,
      stdout: '300000\n',
    });
    const endless = await runShell(world, 'yes | $EXECD run -- head -1; echo "cli=${PIPESTATUS[1]}"');
    expect(endless).toMatchObject({ code: 0, stdout: 'y\ncli=0\n', stderr: '' });
  });

  it('--env sets variables (repeatable); without it the command has the daemon environment, not the caller one', async () => {
    const world = cliWorld();
    const result = await world.run(
      [
        'run',
        '--env',
        'GREETING=hello world',
        '--env',
        'EMPTY=',
        '--env',
        'EQ=a=b',
        '--',
        'echo "$GREETING|${EMPTY-unset}|$EQ"',
      ],
      {
        env: { CALLER_ONLY: 'not-forwarded' },
      },
    );
    expect(result).toMatchObject({ code: 0, stdout: 'hello world||a=b\n' });
    // The daemon was started by the first run, with the caller's environment then; a later caller's
    // own variable does not reach the command.
    const later = await world.run(['run', '--', 'echo "${LATER_CALLER-absent}"'], { env: { LATER_CALLER: 'x' } });
    expect(later.stdout).toBe('absent\n');
    const bad = await world.run(['run', '--env', 'NOEQUALS', '--', 'true']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(
      `execd run: --env expects NAME=VALUE with a variable name, got "NOEQUALS" (see 'execd run --help')\n`,
    );
  });

  it('several words after -- are an argv, each word as typed; one word is a script', async () => {
    const world = cliWorld();
    const dir = join(world.dir, 'my dir');
    mkdirSync(dir);
    writeFileSync(join(dir, 'inside.txt'), '');
    expect(await world.run(['run', '--', 'ls', 'my dir'])).toMatchObject({ code: 0, stdout: 'inside.txt\n' });
    expect(await world.run(['run', '--', 'printf', '%s|', 'a  b', "it's", '$HOME', ''])).toMatchObject({
      code: 0,
      stdout: "a  b|it's|$HOME||",
    });
    expect(await world.run(['run', '--', 'echo a  b | tr a-z A-Z'])).toMatchObject({ code: 0, stdout: 'A B\n' });
    const started = await world.run(['start', '--', 'printf', '%s|', 'x  y']);
    const jobId = started.stdout.trim();
    expect(await world.run(['read', '--follow', jobId])).toMatchObject({ code: 0, stdout: 'x  y|' });
  });
});
