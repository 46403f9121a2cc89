/** Sandbox policy resolution: request > session > defaultSandboxMode, and the workspace root. */
import { describe, expect, it } from 'vitest';
import type { ResolveContext } from '../../daemon/runs/resolve.js';
import { resolveSandboxPolicy } from '../../daemon/sandbox/session-policy.js';
import { enforceableModes } from '../../daemon/sandbox/modes.js';
import { DEFAULT_CONFIG } from '../../protocol/config.js';

const ctx = (over: Partial<ResolveContext> = {}): ResolveContext => ({
  session: { id: 's1', cwd: '/work/s1' },
  config: DEFAULT_CONFIG,
  daemonCwd: '/daemon',
  baseEnv: {},
  shellArgv: (command) => ['bash', '-c', command],
  ...over,
});

describe('resolveSandboxPolicy', () => {
  it('is danger-full-access without a workspace root by default', () => {
    expect(resolveSandboxPolicy(undefined, ctx())).toEqual({ mode: 'danger-full-access' });
  });

  it('takes defaultSandboxMode, with the session cwd as the workspace root', () => {
    const config = { ...DEFAULT_CONFIG, defaultSandboxMode: 'read-only' as const };
    expect(resolveSandboxPolicy(undefined, ctx({ config }))).toEqual({ mode: 'read-only', workspaceRoot: '/work/s1' });
  });

  it("takes the request's mode over the session's, and the session policy's root when the request names none", () => {
    const session = { id: 's1', cwd: '/work/s1', sandbox: { mode: 'read-only' as const, workspaceRoot: '/repo' } };
    expect(resolveSandboxPolicy(undefined, ctx({ session }))).toEqual({ mode: 'read-only', workspaceRoot: '/repo' });
    expect(resolveSandboxPolicy({ mode: 'workspace-write' }, ctx({ session }))).toEqual({
      mode: 'workspace-write',
      workspaceRoot: '/repo',
    });
    expect(resolveSandboxPolicy({ mode: 'workspace-write', workspaceRoot: '/other' }, ctx({ session }))).toEqual({
      mode: 'workspace-write',
      workspaceRoot: '/other',
    });
    expect(resolveSandboxPolicy({ mode: 'danger-full-access' }, ctx({ session }))).toEqual({
      mode: 'danger-full-access',
    });
  });

  it('falls back to config.cwd, then the daemon cwd, for the root of a session without cwd', () => {
    const session = { id: 's1', sandbox: { mode: 'workspace-write' as const } };
    expect(
      resolveSandboxPolicy(undefined, ctx({ session, config: { ...DEFAULT_CONFIG, cwd: '/cfg' } })).workspaceRoot,
    ).toBe('/cfg');
    expect(resolveSandboxPolicy(undefined, ctx({ session })).workspaceRoot).toBe('/daemon');
  });
});

describe('enforceableModes', () => {
  it('always offers danger-full-access, and the confined modes only with a working runner', () => {
    expect(enforceableModes(false)).toEqual(['danger-full-access']);
    expect(enforceableModes(true)).toEqual(['read-only', 'workspace-write', 'danger-full-access']);
  });
});
