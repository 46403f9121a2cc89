/** `execd run` through the built CLI: auto-start, output, exit codes, live streaming (SPEC §4). */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderResult } from '../../shared/render.js';
import type { ShellRunResult } from '../../protocol/types.js';
import { cliWorld } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';

describe('execd run', { timeout: 180_000 }, () => {
  it('starts a daemon from a clean state dir, prints hello and exits 0', async () => {
    const world = cliWorld();
    expect(existsSync(world.stateDir)).toBe(false);
    const result = await world.run(['run', '--', 'echo', 'hello']);
    expect(result).toMatchObject({ code: 0, stdout: 'hello\n', stderr: '' });
    expect(world.daemonPids()).toHaveLength(1);
    // The detached daemon logs to the state dir.
    expect(readFileSync(join(world.stateDir, 'execd.log'), 'utf8')).toContain('"msg":"listening"');
  });

  it("exits with the command's exit code and prints the exit marker to stderr", async () => {
    const world = cliWorld();
    const result = await world.run(['run', '--', 'echo out; exit 4']);
    expect(result).toMatchObject({ code: 4, stdout: 'out\n', stderr: '[exit code: 4]\n' });
  });

  it('exits 124 after a timeout, with the timeout marker', async () => {
    const world = cliWorld();
    const result = await world.run(['run', '--timeout', '300', '--', 'sleep 30']);
    expect(result.code).toBe(124);
    expect(result.stderr).toContain('[timed out after 300ms]');
  });

  it('exits 128+n when the command dies of signal n', async () => {
    const world = cliWorld();
    const result = await world.run(['run', '--', 'kill -TERM $$']);
    expect(result.code).toBe(143);
    expect(result.stderr).toBe('[killed by signal: SIGTERM]\n');
  });

  it('streams output before the command ends; Ctrl-C aborts the run and exits 130', async () => {
    const world = cliWorld();
    const cli = world.spawn(['run', '--', 'echo first; echo err-first >&2; sleep 30; echo never']);
    await waitFor(() => cli.stdout().includes('first\n') && cli.stderr().includes('err-first\n'), 'streamed output', {
      timeoutMs: 60_000,
    });
    expect(cli.proc.exitCode).toBeNull();
    cli.proc.kill('SIGINT');
    const result = await cli.done;
    expect(result.code).toBe(130);
    expect(result.stdout).toBe('first\n');
  });

  it('--render prints exactly the text the model reads, then a newline; --json the result', async () => {
    const world = cliWorld();
    const json = await world.run(['run', '--json', '--', 'echo hi; echo oops >&2; exit 3']);
    expect(json.code).toBe(3);
    const result = JSON.parse(json.stdout) as ShellRunResult;
    expect(result).toMatchObject({ exitCode: 3, stdout: { text: 'hi\n' }, stderr: { text: 'oops\n' } });
    const rendered = await world.run(['run', '--render', '--', 'echo hi; echo oops >&2; exit 3']);
    expect(rendered).toMatchObject({ code: 3, stdout: `${renderResult(result)}\n`, stderr: '' });
    expect(rendered.stdout).toBe('hi\n[stderr]\noops\n[exit code: 3]\n');
  });

  it('runs in the current directory and in --workdir', async () => {
    const world = cliWorld();
    expect((await world.run(['run', '--', 'pwd'], { cwd: '/tmp' })).stdout).toBe('/tmp\n');
    expect((await world.run(['run', '--workdir', '/', '--', 'pwd'])).stdout).toBe('/\n');
  });

  it('reports an execd error on one line with exit code 125', async () => {
    const world = cliWorld();
    const result = await world.run(['run', '--workdir', '/no/such/dir', '--', 'true']);
    expect(result.code).toBe(125);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain('/no/such/dir');
  });

  it('takes --socket and --state-dir flags before or after the subcommand', async () => {
    const world = cliWorld();
    const env = { EXECD_SOCKET: join(world.dir, 'nowhere.sock'), EXECD_STATE_DIR: join(world.dir, 'nowhere') };
    const before = await world.run(
      ['--socket', world.socketPath, '--state-dir', world.stateDir, 'run', '--', 'echo a'],
      { env },
    );
    const after = await world.run(
      ['run', `--socket=${world.socketPath}`, '--state-dir', world.stateDir, '--', 'echo b'],
      { env },
    );
    expect([before.stdout, after.stdout]).toEqual(['a\n', 'b\n']);
    expect(world.daemonPids()).toHaveLength(1);
    expect(existsSync(env.EXECD_STATE_DIR)).toBe(false);
  });
});
