/**
 * The CLI inside a real bash pipeline (`execd run -- yes | head -2`, `echo piped | execd run -- cat`),
 * and the CLI with its stdout already closed. `$EXECD` in the script is the built CLI; the world's
 * endpoint is in the environment. Every process started here is killed when the test finishes.
 */
import { spawn } from 'node:child_process';
import { onTestFinished } from 'vitest';
import type { CliResult, CliWorld } from './cli.js';
import { CLI } from './daemon.js';

function collect(proc: ReturnType<typeof spawn>): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  proc.stdout?.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  proc.stderr!.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  onTestFinished(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  return new Promise((resolve) => proc.once('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
}

/** Runs `bash -c script` in the world's directory, with `$EXECD` naming the CLI. */
export function runShell(world: CliWorld, script: string): Promise<CliResult> {
  const proc = spawn('bash', ['-c', script], {
    env: { ...world.env, EXECD: `${process.execPath} ${CLI}` },
    cwd: world.dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return collect(proc);
}

/** Runs `execd ARGS...` whose stdout pipe has no reader from the start: every write fails with EPIPE. */
export function runWithClosedStdout(world: CliWorld, args: string[]): Promise<CliResult> {
  const proc = spawn(process.execPath, [CLI, ...args], {
    env: world.env,
    cwd: world.dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // The child holds only the write end; closing ours leaves the pipe without a reader.
  proc.stdout.destroy();
  return collect(proc);
}
