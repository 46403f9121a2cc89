/** Platform facts for both platforms, by injection (SPEC §7): nothing here depends on the host. */
import { describe, expect, it } from 'vitest';
import { resolveEndpoint } from '../../client/endpoint.js';
import { platformFlavor } from '../../client/tool/index.js';
import { pipeSuffix, platformFacts, type HostFacts } from '../../protocol/platform.js';

const host: HostFacts = {
  username: () => 'ada',
  homedir: () => '/home/ada',
  tmpdir: () => '/tmp',
  uid: () => 1000,
};
const winHost: HostFacts = { ...host, homedir: () => 'C:\\Users\\ada', tmpdir: () => 'C:\\Temp' };

describe('POSIX facts', () => {
  const linux = platformFacts('linux', host);

  it('runs bash -c with the command unparsed and offers the bash tool', () => {
    expect(linux.shellArgv('echo "$HOME" | wc')).toEqual(['bash', '-c', 'echo "$HOME" | wc']);
    expect(linux.shell).toBe('bash');
    expect(linux.toolName).toBe('bash');
    expect(platformFlavor(linux).name).toBe('bash');
  });

  it('puts the socket under XDG_RUNTIME_DIR, else a per-uid tmp dir, whatever the state dir', () => {
    expect(linux.defaultSocketPath({ XDG_RUNTIME_DIR: '/run/user/1000' })).toBe('/run/user/1000/execd/execd.sock');
    expect(linux.defaultSocketPath({})).toBe('/tmp/execd-1000/execd.sock');
    expect(linux.defaultSocketPath({}, '/elsewhere/state')).toBe('/tmp/execd-1000/execd.sock');
    expect(linux.socketIsFile).toBe(true);
  });

  it('keeps state under XDG_STATE_HOME, else ~/.local/state', () => {
    expect(linux.defaultStateDir({ XDG_STATE_HOME: '/xdg/state' })).toBe('/xdg/state/execd');
    expect(linux.defaultStateDir({})).toBe('/home/ada/.local/state/execd');
  });

  it('kills process groups of detached children; /proc only on Linux', () => {
    expect(linux).toMatchObject({
      killStrategy: 'process-group',
      spawnDetached: true,
      hasProc: true,
      modeBits: true,
      name: 'linux',
    });
    expect(platformFacts('darwin', host)).toMatchObject({
      killStrategy: 'process-group',
      hasProc: false,
      toolName: 'bash',
    });
  });
});

describe('Windows facts', () => {
  const win = platformFacts('win32', winHost);

  it('runs pwsh -NoProfile -NonInteractive -Command with the command unparsed and offers the pwsh tool', () => {
    expect(win.shellArgv('Get-ChildItem | Select-Object -First 1')).toEqual([
      'pwsh',
      '-NoProfile',
      '-NonInteractive',
      '-Command',
      'Get-ChildItem | Select-Object -First 1',
    ]);
    expect(win.shell).toBe('pwsh');
    expect(win.toolName).toBe('pwsh');
    expect(platformFlavor(win).name).toBe('pwsh');
  });

  it('keeps state under %LOCALAPPDATA%, else the profile AppData\\Local', () => {
    expect(win.defaultStateDir({ LOCALAPPDATA: 'D:\\Local' })).toBe('D:\\Local\\execd');
    expect(win.defaultStateDir({})).toBe('C:\\Users\\ada\\AppData\\Local\\execd');
  });

  it('names the pipe after the user, with no suffix for the default state dir', () => {
    const env = { LOCALAPPDATA: 'C:\\Users\\ada\\AppData\\Local' };
    expect(win.defaultSocketPath(env)).toBe('\\\\.\\pipe\\execd-ada');
    expect(win.defaultSocketPath(env, 'C:\\Users\\ada\\AppData\\Local\\execd')).toBe('\\\\.\\pipe\\execd-ada');
    // Windows paths are case-insensitive: the same directory is the same daemon.
    expect(win.defaultSocketPath(env, 'c:\\users\\ADA\\appdata\\local\\execd\\')).toBe('\\\\.\\pipe\\execd-ada');
  });

  it('adds a suffix derived from a non-default state dir, stable and distinct per dir', () => {
    const env = { LOCALAPPDATA: 'C:\\Users\\ada\\AppData\\Local' };
    const a = win.defaultSocketPath(env, 'D:\\work\\state-a');
    const b = win.defaultSocketPath(env, 'D:\\work\\state-b');
    expect(a).toMatch(/^\\\\\.\\pipe\\execd-ada-[0-9a-f]{8}$/);
    expect(a).toBe(`\\\\.\\pipe\\execd-ada-${pipeSuffix('D:\\work\\state-a')}`);
    expect(b).not.toBe(a);
    expect(win.defaultSocketPath(env, 'd:\\WORK\\state-a')).toBe(a);
  });

  it('uses a pipe, not a socket file, and kills trees with tree-kill without detaching', () => {
    expect(win).toMatchObject({
      socketIsFile: false,
      killStrategy: 'tree-kill',
      spawnDetached: false,
      hasProc: false,
      modeBits: false,
      name: 'win32',
    });
  });
});

describe('endpoint resolution', () => {
  const win = platformFacts('win32', winHost);
  const env = { LOCALAPPDATA: 'C:\\Users\\ada\\AppData\\Local' };

  it('derives the default pipe from the chosen state dir', () => {
    expect(resolveEndpoint({ stateDir: 'D:\\work\\state-a' }, env, win)).toEqual({
      stateDir: 'D:\\work\\state-a',
      socketPath: `\\\\.\\pipe\\execd-ada-${pipeSuffix('D:\\work\\state-a')}`,
    });
    expect(resolveEndpoint({}, { ...env, EXECD_STATE_DIR: 'D:\\s' }, win).socketPath).toBe(
      `\\\\.\\pipe\\execd-ada-${pipeSuffix('D:\\s')}`,
    );
    expect(resolveEndpoint({}, env, win)).toEqual({
      stateDir: 'C:\\Users\\ada\\AppData\\Local\\execd',
      socketPath: '\\\\.\\pipe\\execd-ada',
    });
  });

  it('lets a flag or EXECD_SOCKET win over the default', () => {
    expect(resolveEndpoint({ socketPath: '\\\\.\\pipe\\mine' }, env, win).socketPath).toBe('\\\\.\\pipe\\mine');
    expect(resolveEndpoint({}, { ...env, EXECD_SOCKET: '\\\\.\\pipe\\env' }, win).socketPath).toBe('\\\\.\\pipe\\env');
    const linux = platformFacts('linux', host);
    expect(resolveEndpoint({}, { XDG_RUNTIME_DIR: '/run/u', XDG_STATE_HOME: '/s' }, linux)).toEqual({
      socketPath: '/run/u/execd/execd.sock',
      stateDir: '/s/execd',
    });
  });
});
