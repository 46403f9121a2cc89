/**
 * `execd run` is a pipe (issue 26.3, 26.4, 26.8): stdin and stdout carry bytes exactly, the
 * command starts at once and gets stdin as it arrives, a stdin that never closes does not hold a
 * command that does not read it, and a streamed run says nothing of truncation and leaves no file.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { onTestFinished, describe, expect, it } from 'vitest';
import { cliWorld, type CliWorld } from '../helpers/cli.js';
import { runShell } from '../helpers/cli-shell.js';
import { CLI } from '../helpers/daemon.js';

/** Runs the CLI with `stdin` piped from the test; resolves with its exit code and raw stdout. */
function runPiped(
  world: CliWorld,
  args: string[],
  feed: (stdin: NodeJS.WritableStream) => void,
): Promise<{ code: number | null; stdout: Buffer; stderr: string }> {
  const proc = spawn(process.execPath, [CLI, ...args], { env: world.env, cwd: world.dir, stdio: 'pipe' });
  onTestFinished(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  const out: Buffer[] = [];
  let stderr = '';
  proc.stdout.on('data', (chunk: Buffer) => out.push(chunk));
  proc.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  proc.stdin.on('error', () => {});
  feed(proc.stdin);
  return new Promise((resolve) => proc.once('close', (code) => resolve({ code, stdout: Buffer.concat(out), stderr })));
}

/** Files left in the world's spill directories. */
function spillFiles(world: CliWorld): string[] {
  const root = join(world.stateDir, 'spill');
  let sessions: string[];
  try {
    sessions = readdirSync(root);
  } catch {
    return [];
  }
  return sessions.flatMap((dir) => readdirSync(join(root, dir)).map((name) => join(dir, name)));
}

describe('execd run carries bytes', { timeout: 120_000 }, () => {
  it('binary stdin arrives exactly: 1000 random bytes are 1000 bytes with the same digest', async () => {
    const world = cliWorld();
    const data = randomBytes(1000);
    writeFileSync(join(world.dir, 'random.bin'), data);
    expect(await runShell(world, "head -c 1000 /dev/urandom | $EXECD run -- 'wc -c'")).toMatchObject({
      code: 0,
      stdout: '1000\n',
    });
    const digest = createHash('sha256').update(data).digest('hex');
    const hashed = await runShell(world, '$EXECD run -- sha256sum < random.bin');
    expect(hashed.stdout).toBe(`${digest}  -\n`);
  });

  it('binary stdout arrives exactly: gzip output through the CLI gunzips to the file', async () => {
    const world = cliWorld();
    const text = Buffer.from('line of text éà€ 😀\n'.repeat(5000));
    writeFileSync(join(world.dir, 'plain.txt'), text);
    const piped = await runShell(world, "$EXECD run -- 'gzip -c plain.txt' | gunzip | sha256sum");
    expect(piped.stdout).toBe(`${createHash('sha256').update(text).digest('hex')}  -\n`);
    const raw = await runPiped(world, ['run', '--', 'gzip -c plain.txt'], (stdin) => stdin.end());
    expect(raw.code).toBe(0);
    expect(gunzipSync(raw.stdout).equals(text)).toBe(true);
    const random = await runPiped(world, ['run', '--', 'head -c 3000000 /dev/urandom | tee r.bin'], (s) => s.end());
    const local = await runShell(world, 'sha256sum < r.bin');
    expect(`${createHash('sha256').update(random.stdout).digest('hex')}  -\n`).toBe(local.stdout);
  });

  it('starts the command at once and forwards stdin as it arrives, EOF when it ends', async () => {
    const world = cliWorld();
    expect((await world.run(['run', '--', 'true'])).code).toBe(0); // the daemon is up
    const started = Date.now();
    const proc = spawn(
      process.execPath,
      [CLI, 'run', '--', 'echo ready; while read -r line; do echo "got $line"; done; echo end'],
      {
        env: world.env,
        cwd: world.dir,
        stdio: 'pipe',
      },
    );
    onTestFinished(() => {
      if (proc.exitCode === null) proc.kill('SIGKILL');
    });
    let stdout = '';
    const seen = (text: string) =>
      new Promise<void>((resolve) => {
        const check = () => stdout.includes(text) && (proc.stdout.off('data', check), resolve());
        proc.stdout.on('data', check);
        check();
      });
    proc.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    const stdinRef = proc.stdin;
    // The command runs before any stdin arrived, with the caller's stdin still open.
    await seen('ready\n');
    const firstAnswerMs = Date.now() - started;
    stdinRef.write('one\n');
    await seen('got one\n');
    stdinRef.write('two\n');
    await seen('got two\n');
    stdinRef.end();
    const code = await new Promise((resolve) => proc.once('close', resolve));
    console.log(`first output while stdin open after ${firstAnswerMs} ms`);
    expect(code).toBe(0);
    expect(stdout).toBe('ready\ngot one\ngot two\nend\n');
  });

  it('a stdin that never closes does not hold a command that does not read it', async () => {
    const world = cliWorld();
    // The caller's stdin stays open (nothing is written, nothing ends it) for the whole run.
    const result = await runPiped(world, ['run', '--', 'echo done'], () => {});
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout.toString()).toBe('done\n');
  });

  it('large stdin is paced by the command, not buffered whole: 64 MiB through a slow reader', async () => {
    const world = cliWorld();
    const result = await runShell(
      world,
      'head -c 67108864 /dev/zero | $EXECD run -- \'sleep 1; wc -c\'; echo "cli=${PIPESTATUS[1]}"',
    );
    expect(result.stdout).toBe('67108864\ncli=0\n');
  });

  it('a streamed run larger than the capture says no "truncated" and leaves no file on disk', async () => {
    const world = cliWorld();
    const result = await runPiped(world, ['run', '--', 'head -c 5000000 /dev/zero; echo tail >&2'], (s) => s.end());
    expect(result.code).toBe(0);
    expect(result.stdout.length).toBe(5_000_000);
    expect(result.stderr).toBe('tail\n');
    expect(result.stderr).not.toMatch(/truncated/);
    expect(spillFiles(world)).toEqual([]);
  });
});
