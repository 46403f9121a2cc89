/**
 * A reader that goes away (`| head -2`) ends the CLI quietly with 141, as SIGPIPE would end a
 * shell command: no stack trace, and the remote command is killed.
 */
import { describe, expect, it } from 'vitest';
import { cliWorld, pidsWithCmdline } from '../helpers/cli.js';
import { runShell, runWithClosedStdout } from '../helpers/cli-shell.js';
import { waitFor } from '../helpers/wait.js';

describe('a closed stdout', { timeout: 120_000 }, () => {
  it('execd run -- yes | head -2 prints two lines, exits 141 quietly and kills the remote command', async () => {
    const world = cliWorld();
    const token = `execd-epipe-${process.pid}-${Date.now()}`;
    const result = await runShell(
      world,
      `$EXECD run -- 'yes ${token}' 2>cli.err | head -2; echo "cli=\${PIPESTATUS[0]}"; cat cli.err`,
    );
    expect(result).toMatchObject({ code: 0, stdout: `${token}\n${token}\ncli=141\n`, stderr: '' });
    await waitFor(() => pidsWithCmdline('yes', token).length === 0, 'the remote yes to be killed');
  });

  it('execd run --json … | head -c 600 exits 141 quietly', async () => {
    const world = cliWorld();
    // Both streams' tails in the JSON: far more than a pipe buffer holds.
    const big = `head -c 100000 /dev/zero | tr '\\\\0' a; head -c 100000 /dev/zero | tr '\\\\0' b >&2`;
    const result = await runShell(
      world,
      `$EXECD run --json -- "${big}" 2>cli.err | head -c 600 | wc -c; echo "cli=\${PIPESTATUS[0]}"; cat cli.err`,
    );
    expect(result).toMatchObject({ code: 0, stdout: '600\ncli=141\n', stderr: '' });
  });

  it('every subcommand that prints ends with 141 and nothing on stderr when nobody reads', async () => {
    const world = cliWorld();
    expect((await world.run(['run', '--', 'true'])).code).toBe(0);
    const cases = [
      ['run', '--', 'echo hello'],
      ['run', '--render', '--', 'echo hello'],
      ['config', 'get'],
      ['status'],
      ['jobs'],
      ['--help'],
      ['--version'],
    ];
    for (const args of cases) {
      expect({ args, ...(await runWithClosedStdout(world, args)) }).toMatchObject({ args, code: 141, stderr: '' });
    }
  });
});
