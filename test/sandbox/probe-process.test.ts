/** The sandbox probes' process runner (daemon/sandbox/probe-process.ts): exit code, output, failures. */
import { describe, expect, it } from 'vitest';
import { runProbe } from '../../daemon/sandbox/probe-process.js';

describe('runProbe', () => {
  it('reports the exit code and both outputs of a program that ran', async () => {
    const outcome = await runProbe('bash', ['-c', 'echo out; echo err >&2; exit 3'], { timeoutMs: 10_000 });
    expect(outcome).toEqual({ exitCode: 3, stdout: 'out\n', stderr: 'err\n' });
  });

  it('gives a program stdin closed and only the environment it was given', async () => {
    const outcome = await runProbe('/bin/sh', ['-c', 'cat; echo "[$HOME]"'], { timeoutMs: 10_000, env: {} });
    expect(outcome).toEqual({ exitCode: 0, stdout: '[]\n', stderr: '' });
  });

  it('names the cause when the program cannot start, or is killed at its timeout', async () => {
    const missing = await runProbe('/nonexistent/probe', [], { timeoutMs: 10_000 });
    expect(missing.exitCode).toBeUndefined();
    expect(missing.failure).toMatch(/^cannot run \/nonexistent\/probe: .*ENOENT/);
    const started = performance.now();
    const slow = await runProbe('sleep', ['30'], { timeoutMs: 200 });
    expect(slow).toMatchObject({ exitCode: undefined, failure: 'sleep did not exit within 200 ms' });
    expect(performance.now() - started).toBeLessThan(10_000);
  });
});
