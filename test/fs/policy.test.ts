import { describe, expect, it } from 'vitest';
import {
  isHidden,
  isWithin,
  refusal,
  resolveRequestPath,
  subtreeRefusal,
  type FsPolicy,
} from '../../daemon/fs/policy.js';
import { compareComponents } from '../../daemon/fs/list.js';

const hidden = [
  { path: '/state', what: "the daemon's state directory" },
  { path: '/run/execd', what: "the daemon's socket directory" },
];
const policy = (mode: FsPolicy['mode']): FsPolicy => ({ mode, workspaceRoot: '/ws', hidden });

describe('the file path policy', () => {
  it('folds .. lexically against the cwd', () => {
    expect(resolveRequestPath('/ws/sub', '../x')).toBe('/ws/x');
    expect(resolveRequestPath('/ws', '../../etc/passwd')).toBe('/etc/passwd');
    expect(resolveRequestPath('/ws', '/a/./b/../c')).toBe('/a/c');
  });

  it('isWithin is by component, not by prefix', () => {
    expect(isWithin('/ws', '/ws')).toBe(true);
    expect(isWithin('/ws', '/ws/a')).toBe(true);
    expect(isWithin('/ws', '/wsx')).toBe(false);
    expect(isWithin('/', '/anything')).toBe(true);
  });

  it('read-only refuses every write and allows reads outside hidden trees', () => {
    expect(refusal(policy('read-only'), '/ws/a', 'write')).toBe('the read-only sandbox refuses every write');
    expect(refusal(policy('read-only'), '/etc/passwd', 'read')).toBeUndefined();
  });

  it('workspace-write writes only beneath the workspace root and names it', () => {
    expect(refusal(policy('workspace-write'), '/ws/a/b', 'write')).toBeUndefined();
    expect(refusal(policy('workspace-write'), '/wsx', 'write')).toMatch(/outside the workspace root \/ws/);
    expect(refusal(policy('workspace-write'), '/tmp/x', 'write')).toMatch(/workspace-write writes only beneath it/);
  });

  it('danger-full-access writes anywhere but the hidden trees', () => {
    expect(refusal(policy('danger-full-access'), '/tmp/x', 'write')).toBeUndefined();
    for (const mode of ['read-only', 'workspace-write', 'danger-full-access'] as const) {
      expect(refusal(policy(mode), '/state/token', 'read')).toMatch(/inside the daemon's state directory \/state/);
      expect(refusal(policy(mode), '/run/execd/execd.sock', 'write')).toMatch(/socket directory/);
    }
  });

  it('no remove or move of a tree that holds a hidden one', () => {
    expect(subtreeRefusal(policy('danger-full-access'), '/')).toMatch(/holds the daemon's state directory/);
    expect(subtreeRefusal(policy('danger-full-access'), '/run')).toMatch(/socket directory/);
    expect(subtreeRefusal(policy('danger-full-access'), '/ws')).toBeUndefined();
    expect(isHidden(policy('danger-full-access'), '/state/spill/other/x')).toBe(true);
  });

  it('lists in component order: a directory is followed by its children', () => {
    const paths = [['a-c'], ['a', 'b'], ['a']];
    expect(paths.sort(compareComponents)).toEqual([['a'], ['a', 'b'], ['a-c']]);
  });
});
