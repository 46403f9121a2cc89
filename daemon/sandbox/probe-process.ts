/**
 * Runs a sandbox probe's program to its end. A probe is one short process at start-up, so it is
 * spawned with `child_process` directly: execa costs the daemon ~100 ms of loading before its
 * first answer (B9), for a call that needs none of its features.
 */
import { spawn } from 'node:child_process';

/** How a probe's program ended. */
export interface ProbeOutcome {
  /** Its exit code; undefined when it could not start, was killed or timed out. */
  exitCode: number | undefined;
  stdout: string;
  stderr: string;
  /** Why it has no exit code (spawn error, timeout, signal). */
  failure?: string;
}

/** Runs `file args` with stdin closed, killing it after `timeoutMs`. */
export function runProbe(
  file: string,
  args: readonly string[],
  options: { timeoutMs: number; env?: NodeJS.ProcessEnv },
): Promise<ProbeOutcome> {
  return new Promise((resolve) => {
    const out = { stdout: '', stderr: '' };
    let failure: string | undefined;
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], ...(options.env && { env: options.env }) });
    child.stdout.setEncoding('utf8').on('data', (text: string) => (out.stdout += text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => (out.stderr += text));
    const timer = setTimeout(() => {
      failure = `${file} did not exit within ${options.timeoutMs} ms`;
      child.kill('SIGKILL');
    }, options.timeoutMs);
    child.once('error', (error) => (failure ??= `cannot run ${file}: ${error.message}`));
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (code === null || failure !== undefined)
        resolve({ exitCode: undefined, ...out, failure: failure ?? `${file} was killed by ${signal}` });
      else resolve({ exitCode: code, ...out });
    });
  });
}
