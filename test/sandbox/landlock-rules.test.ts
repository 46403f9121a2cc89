/** The Landlock ruleset and the launcher's environment as pure functions of the plan (SPEC §15). */
import { describe, expect, it } from 'vitest';
import {
  ENV_CHUNK_PREFIX,
  expandGrant,
  FS,
  handledFs,
  launcherEnv,
  planGrants,
  ruleRights,
  type Entry,
  type ListDir,
} from '../../daemon/sandbox/landlock-rules.js';
import { landlockPlan } from '../../daemon/sandbox/landlock-runner.js';
import { filterSupported, unixSocketFilter } from '../../daemon/sandbox/unix-socket-filter.js';

/** A directory tree as nested objects: a string is a file, `'->'` a symlink. */
type Tree = { [name: string]: Tree | string };

function fakeList(tree: Tree): ListDir {
  return (dir) => {
    let node: Tree | string | undefined = tree;
    for (const part of dir.split('/').filter(Boolean)) node = typeof node === 'object' ? node[part] : undefined;
    if (typeof node !== 'object') return [];
    return Object.entries(node).map(([name, child]): Entry => ({
      name,
      type: child === '->' ? 'symlink' : typeof child === 'object' ? 'dir' : 'other',
    }));
  };
}

const tree: Tree = {
  bin: '->',
  etc: { passwd: 'x' },
  home: { u: { '.local': { state: { execd: { token: 't', spill: { s1: {}, s2: {} } } } }, project: {}, notes: 'n' } },
  tmp: { a: {} },
};

describe('expandGrant', () => {
  it('grants a directory whole when nothing hidden lies beneath it', () => {
    expect(expandGrant('/etc', 'read', ['/home/u/.local/state/execd'], fakeList(tree))).toEqual([
      { path: '/etc', kind: 'read' },
    ]);
  });

  it('grants the siblings along the path to a hidden directory, never the directory or its parents, and no symlink', () => {
    const grants = expandGrant('/', 'read', ['/home/u/.local/state/execd'], fakeList(tree)).map((g) => g.path);
    expect(grants.sort()).toEqual(['/etc', '/home/u/notes', '/home/u/project', '/tmp']);
    expect(grants).not.toContain('/bin');
  });

  it('grants nothing inside a hidden directory', () => {
    expect(
      expandGrant('/home/u/.local/state/execd/spill', 'read', ['/home/u/.local/state/execd'], fakeList(tree)),
    ).toEqual([]);
  });
});

describe('planGrants', () => {
  it("adds the session's spill dir readable, the writable roots and the devices", () => {
    const grants = planGrants(
      {
        read: ['/'],
        write: ['/home/u/project'],
        devices: ['/dev/null'],
        hidden: ['/home/u/.local/state/execd'],
        readable: ['/home/u/.local/state/execd/spill/s1'],
        network: 'off',
      },
      fakeList(tree),
    );
    expect(grants).toContainEqual({ path: '/home/u/project', kind: 'write' });
    expect(grants).toContainEqual({ path: '/home/u/.local/state/execd/spill/s1', kind: 'read' });
    expect(grants).toContainEqual({ path: '/dev/null', kind: 'device' });
    expect(grants.map((g) => g.path)).not.toContain('/home/u/.local/state/execd/spill/s2');
  });
});

describe('landlockPlan', () => {
  it("keeps /dev's files and the host's temp dir out; grants the devices, /dev's names and the session's temp dir", () => {
    const plan = landlockPlan({
      mode: 'workspace-write',
      workspaceRoot: '/nonexistent/ws',
      hiddenDirs: ['/nonexistent/state'],
      readableDirs: ['/nonexistent/state/spill/s1'],
      tempDir: '/nonexistent/state/tmp/s1',
      network: 'on',
    });
    expect(plan.write).toEqual(['/nonexistent/ws']);
    expect(plan.ownWrite).toEqual(['/nonexistent/state/tmp/s1']);
    expect(plan.devices).toEqual(expect.arrayContaining(['/dev/null', '/dev/tty']));
    const list = fakeList({ dev: { pts: { '0': 'x' }, ptmx: 'x', null: 'x', tty1: 'x', shm: {} }, etc: {}, tmp: {} });
    const grants = planGrants(plan, list);
    expect(grants.filter((grant) => grant.path.startsWith('/dev/pts') || grant.path === '/dev/ptmx')).toEqual([]);
    expect(grants.filter((grant) => grant.path === '/dev/tty1')).toEqual([]);
    expect(grants).toEqual(
      expect.arrayContaining([
        { path: '/dev', kind: 'list' },
        { path: '/dev/shm', kind: 'read' },
        { path: '/dev/null', kind: 'device' },
        { path: '/tmp', kind: 'read' },
      ]),
    );
    expect(grants.filter((grant) => grant.kind === 'write').map((grant) => grant.path)).toEqual([
      '/nonexistent/ws',
      '/nonexistent/state/tmp/s1',
    ]);
    const readOnly = landlockPlan({
      ...{ mode: 'read-only' as const },
      workspaceRoot: '/nonexistent/ws',
      hiddenDirs: [],
      readableDirs: [],
      tempDir: '/nonexistent/t',
      network: 'on',
    });
    expect(readOnly.write).toEqual([]);
    expect(readOnly.ownWrite).toEqual([]);
    expect(readOnly.readable).toContain('/nonexistent/t');
  });
});

describe('ruleRights', () => {
  it('masks rights to the ABI and to what a file accepts', () => {
    expect(handledFs(1) & FS.REFER).toBe(0);
    expect(handledFs(3) & FS.TRUNCATE).toBe(FS.TRUNCATE);
    expect(ruleRights('write', true, 7) & FS.MAKE_REG).toBe(FS.MAKE_REG);
    expect(ruleRights('write', false, 7) & FS.MAKE_REG).toBe(0);
    expect(ruleRights('read', true, 7) & FS.WRITE_FILE).toBe(0);
    expect(ruleRights('write', true, 1) & (FS.REFER | FS.TRUNCATE)).toBe(0);
  });
});

describe('launcherEnv', () => {
  it("carries the command's environment whole, in chunks below the kernel's string limit, and nothing else", () => {
    const env = { PATH: '/usr/bin', NODE_OPTIONS: '--require /x.js', BIG: 'y'.repeat(250_000) };
    const chunks = launcherEnv(env);
    const names = Object.keys(chunks);
    expect(names.every((name) => name.startsWith(ENV_CHUNK_PREFIX))).toBe(true);
    expect(names.length).toBe(3);
    expect(Object.values(chunks).every((value) => value.length <= 100_000)).toBe(true);
    const json = names.map((_, n) => chunks[`${ENV_CHUNK_PREFIX}${n}`]).join('');
    expect(JSON.parse(json)).toEqual(env);
  });
});

describe('unixSocketFilter', () => {
  it('is a BPF program of whole 8-byte instructions ending in allow and deny', () => {
    expect(filterSupported('x64') && filterSupported('arm64')).toBe(true);
    const program = unixSocketFilter('x64');
    expect(program.length % 8).toBe(0);
    expect(program.readUInt32LE(program.length - 12)).toBe(0x7fff0000);
    expect(program.readUInt32LE(program.length - 4)).toBe(0x0005000d);
  });

  it("under network 'off' refuses socket(2) outright and lets only an AF_UNIX socketpair through", () => {
    const program = unixSocketFilter('x64', 'off');
    const instructions = Array.from({ length: program.length / 8 }, (_, i) => ({
      code: program.readUInt16LE(i * 8),
      jt: program.readUInt8(i * 8 + 2),
      k: program.readUInt32LE(i * 8 + 4),
      at: i,
    }));
    const target = (i: { at: number; jt: number }) => instructions[i.at + 1 + i.jt]!;
    const onSocket = instructions.find((i) => i.code === 0x15 && i.k === 41)!;
    expect(target(onSocket)).toMatchObject({ code: 0x06, k: 0x0005000d });
    expect(instructions.some((i) => i.code === 0x15 && i.k === 53)).toBe(true);
    expect(program.readUInt32LE(program.length - 4)).toBe(0x0005000d);
    expect(unixSocketFilter('x64', 'on').equals(unixSocketFilter('x64'))).toBe(true);
  });
});
