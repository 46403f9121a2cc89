/**
 * Landlock's probe answers after the daemon listens (SPEC §15, docs/sandbox.md): until it has, a
 * confined command waits for it, and a probe that fails leaves confined modes unavailable — fail
 * closed, never open.
 */
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExecdRpcError } from '../../client/connection.js';
import type { SandboxRunner } from '../../daemon/sandbox/runner.js';
import { ProbedRunner } from '../../daemon/sandbox/runner.js';
import { sandboxedSession } from '../helpers/sandbox.js';

function runner(backend: 'landlock' | undefined): SandboxRunner {
  return {
    backend,
    bwrapPath: 'bwrap',
    unavailable: backend ? undefined : 'landlock: the probe said no',
    modes: backend ? ['read-only', 'workspace-write', 'danger-full-access'] : ['danger-full-access'],
    info: backend ? { backend, enforces: ['files'], landlockAbi: 7 } : { backend: null, enforces: [] },
  };
}

describe('ProbedRunner', () => {
  it('reports what the kernel promised until the probe answers, then the probe’s answer', async () => {
    let answer: (runner: SandboxRunner) => void = () => {};
    const probed = new ProbedRunner(runner('landlock'), new Promise((resolve) => (answer = resolve)));
    expect(probed.isSettled).toBe(false);
    expect(probed.current.backend).toBe('landlock');
    answer(runner(undefined));
    expect((await probed.settled).backend).toBeUndefined();
    expect(probed.isSettled).toBe(true);
    expect(probed.current.modes).toEqual(['danger-full-access']);
  });

  it('without a probe out it is settled at once', async () => {
    const probed = new ProbedRunner(runner(undefined));
    expect(probed.isSettled).toBe(true);
    expect(await probed.settled).toBe(probed.current);
  });
});

describe('a Landlock probe that fails after the daemon listens', () => {
  it('fails the confined run that waited for it closed, and leaves only danger-full-access', async () => {
    // The kernel offers Landlock, but the probe cannot make its scratch layout in a missing TMPDIR.
    const { daemon, client, workspace } = await sandboxedSession(
      { mode: 'workspace-write', escalationTargets: ['danger-full-access'] },
      { env: { TMPDIR: join(tmpdir(), 'execd-no-such-tmp') }, config: { sandboxBackend: 'landlock' } },
    );
    const error = await client.run({ sessionId: 's1', command: 'touch ran.txt' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ExecdRpcError);
    expect((error as ExecdRpcError).errorName).toBe('SANDBOX_UNAVAILABLE');
    expect((error as ExecdRpcError).message).toContain('landlock: the probe failed');
    expect(existsSync(join(workspace, 'ran.txt'))).toBe(false);

    const later = await daemon.connect();
    expect(later.info.capabilities.sandboxModes).toEqual(['danger-full-access']);
    expect(later.info.capabilities.sandbox.backend).toBeNull();
    const free = await client.run({
      sessionId: 's1',
      command: 'touch ran.txt',
      sandboxPolicy: { mode: 'danger-full-access' },
    });
    expect(free).toMatchObject({ exitCode: 0 });
    expect(existsSync(join(workspace, 'ran.txt'))).toBe(true);
  });
});
