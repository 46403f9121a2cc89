/** The tool's working directory (SPEC §3.2). */
import { describe, expect, it } from 'vitest';
import { resolveWorkdir } from '../../../client/tool/workdir.js';

describe('resolveWorkdir', () => {
  it('resolves a relative workdir against the session cwd', () => {
    expect(resolveWorkdir('src/lib', { cwd: '/home/a/project' })).toBe('/home/a/project/src/lib');
    expect(resolveWorkdir('../other', { cwd: '/home/a/project' })).toBe('/home/a/other');
  });

  it('keeps an absolute workdir', () => {
    expect(resolveWorkdir('/tmp/x', { cwd: '/home/a/project' })).toBe('/tmp/x');
    expect(resolveWorkdir('/tmp/x', { cwd: '/p', sandbox: { mode: 'workspace-write', workspaceRoot: '/ws' } })).toBe(
      '/tmp/x',
    );
  });

  it('uses the base when no workdir is given', () => {
    expect(resolveWorkdir(undefined, { cwd: '/home/a/project' })).toBe('/home/a/project');
  });

  it('prefers the sandbox workspaceRoot over the session cwd', () => {
    const session = {
      cwd: '/home/a/project/sub',
      sandbox: { mode: 'workspace-write' as const, workspaceRoot: '/home/a/project' },
    };
    expect(resolveWorkdir(undefined, session)).toBe('/home/a/project');
    expect(resolveWorkdir('build', session)).toBe('/home/a/project/build');
  });

  it('falls back to the session cwd when the policy names no workspace root', () => {
    expect(resolveWorkdir('x', { cwd: '/c', sandbox: { mode: 'read-only' } })).toBe('/c/x');
  });

  it("leaves the daemon's fallback to apply when no session cwd is known", () => {
    expect(resolveWorkdir(undefined, {})).toBeUndefined();
    expect(resolveWorkdir('rel', {})).toBe('rel');
  });
});
