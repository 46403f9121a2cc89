/** The bwrap command line as a pure function of the plan. */
import { describe, expect, it } from 'vitest';
import { bwrapArgv, isInside, outermost, type SandboxPlan } from '../../daemon/sandbox/bwrap-args.js';

const plan: SandboxPlan = {
  mode: 'workspace-write',
  bwrapPath: 'bwrap',
  workspaceRoot: '/home/u/project',
  workdir: '/home/u/project/src',
  hiddenDirs: ['/home/u/.local/state/execd', '/run/user/1/execd'],
  hiddenFiles: ['/etc/execd/tls/key.pem'],
  readableDirs: ['/home/u/.local/state/execd/spill/s1'],
  network: 'on',
};

/** Index of an option with its operands in an argv. */
function indexOf(argv: string[], ...option: string[]): number {
  return argv.findIndex((_, i) => option.every((part, j) => argv[i + j] === part));
}

describe('bwrapArgv', () => {
  it('makes the filesystem read-only, drops capabilities, and ends with the unparsed inner argv', () => {
    const argv = bwrapArgv(plan, ['bash', '-c', 'echo "a b"']);
    expect(argv.slice(0, 4)).toEqual(['bwrap', '--ro-bind', '/', '/']);
    expect(argv).toEqual(expect.arrayContaining(['--unshare-pid', '--cap-drop', 'ALL']));
    expect(argv).not.toContain('--new-session');
    expect(argv.slice(-6)).toEqual(['--chdir', '/home/u/project/src', '--', 'bash', '-c', 'echo "a b"']);
  });

  it("cuts the network with --unshare-net only for network 'off'", () => {
    expect(bwrapArgv(plan, ['true'])).not.toContain('--unshare-net');
    expect(bwrapArgv({ ...plan, network: 'off' }, ['true'])).toContain('--unshare-net');
  });

  it('covers each secret file with /dev/null after the workspace', () => {
    const argv = bwrapArgv(plan, ['true']);
    const secret = indexOf(argv, '--ro-bind', '/dev/null', '/etc/execd/tls/key.pem');
    expect(secret).toBeGreaterThan(indexOf(argv, '--bind', '/home/u/project'));
  });

  it('binds the workspace writable only in workspace-write', () => {
    expect(indexOf(bwrapArgv(plan, ['true']), '--bind', '/home/u/project', '/home/u/project')).toBeGreaterThan(0);
    const readOnly = bwrapArgv({ ...plan, mode: 'read-only' }, ['true']);
    expect(readOnly).not.toContain('--bind');
  });

  it('masks the daemon directories after the workspace, re-exposes the spill dir, then remounts the masks read-only', () => {
    const argv = bwrapArgv(plan, ['true']);
    const workspace = indexOf(argv, '--bind', '/home/u/project');
    const mask = indexOf(argv, '--tmpfs', '/home/u/.local/state/execd');
    const spill = indexOf(argv, '--ro-bind', '/home/u/.local/state/execd/spill/s1');
    const remount = indexOf(argv, '--remount-ro', '/home/u/.local/state/execd');
    expect(indexOf(argv, '--tmpfs', '/run/user/1/execd')).toBeGreaterThan(workspace);
    expect(workspace).toBeLessThan(mask);
    expect(mask).toBeLessThan(spill);
    expect(spill).toBeLessThan(remount);
  });

  it('re-exposes a working directory that the private /tmp hides, under the workspace bind', () => {
    const argv = bwrapArgv({ ...plan, workspaceRoot: '/tmp/w', workdir: '/tmp/w/sub' }, ['true']);
    const workdir = indexOf(argv, '--ro-bind', '/tmp/w/sub', '/tmp/w/sub');
    expect(workdir).toBeGreaterThan(indexOf(argv, '--tmpfs', '/tmp'));
    expect(workdir).toBeLessThan(indexOf(argv, '--bind', '/tmp/w', '/tmp/w'));
    expect(indexOf(bwrapArgv(plan, ['true']), '--ro-bind', plan.workdir)).toBe(-1);
  });
});

describe('isInside', () => {
  it('is true for the directory itself and paths below it only', () => {
    expect(isInside('/tmp', '/tmp')).toBe(true);
    expect(isInside('/tmp/a/b', '/tmp')).toBe(true);
    expect(isInside('/tmpfoo', '/tmp')).toBe(false);
    expect(isInside('/', '/tmp')).toBe(false);
  });
});

describe('outermost', () => {
  it('keeps one mask for nested or repeated hidden directories, in order', () => {
    expect(outermost(['/d/state', '/d'])).toEqual(['/d']);
    expect(outermost(['/s', '/s/run'])).toEqual(['/s']);
    expect(outermost(['/a', '/b', '/a'])).toEqual(['/a', '/b']);
    expect(outermost(['/tmp/x', '/tmp/xy'])).toEqual(['/tmp/x', '/tmp/xy']);
  });
});
