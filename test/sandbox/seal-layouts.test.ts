/**
 * Every layout of state dir, socket dir and workspace either works in every confined mode or is
 * refused with a reason (SPEC §16), once per runner: the state dir inside the socket's directory,
 * the socket's directory inside the state dir, both apart in the system temp dir, and a workspace
 * that contains the state dir.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ExecdRpcError } from '../../client/connection.js';
import { SessionOpen } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { BACKENDS } from '../helpers/sandbox.js';

/** A fresh private directory in the system temp dir, removed after the test. */
function privateDir(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `execd-layout-${name}-`));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

interface Layout {
  name: string;
  /** The daemon's socket path and state dir, and the session's workspace. */
  make: () => { socketPath: string; stateDir: string; workspace: string };
}

const LAYOUTS: Layout[] = [
  {
    name: 'the state dir inside the socket directory',
    make: () => {
      const dir = privateDir('one');
      return { socketPath: join(dir, 's.sock'), stateDir: join(dir, 'state'), workspace: privateDir('ws') };
    },
  },
  {
    name: 'the socket directory inside the state dir',
    make: () => {
      const dir = privateDir('state');
      return { socketPath: join(dir, 'run', 's.sock'), stateDir: dir, workspace: privateDir('ws') };
    },
  },
  {
    name: 'both apart in the system temp dir',
    make: () => ({
      socketPath: join(privateDir('run'), 's.sock'),
      stateDir: privateDir('state'),
      workspace: privateDir('ws'),
    }),
  },
];

describe.each(BACKENDS)('layouts under $name', (backend) => {
  it.each(LAYOUTS)('$name: every confined mode works and hides the daemon', async (layout) => {
    const { socketPath, stateDir, workspace } = layout.make();
    const daemon = await startDaemon({ config: { ...backend.config }, socketPath, stateDir });
    const client = await daemon.connect();
    await client.call(SessionOpen, { sessionId: 's1', cwd: workspace, sandbox: { mode: 'workspace-write' } });
    const token = join(stateDir, 'token');

    const write = await client.run({ sessionId: 's1', command: `echo w > w.txt && cat w.txt; cat '${token}'` });
    expect(write.stdout.text, write.stderr.text).toBe('w\n');
    expect(write.sandbox).toMatchObject({ mode: 'workspace-write', enforcement: backend.name });
    expect(readFileSync(join(workspace, 'w.txt'), 'utf8')).toBe('w\n');
    expect(write.stderr.text).toContain(backend.hiddenError);

    const read = await client.run({
      sessionId: 's1',
      command: `cat w.txt; echo r > r.txt; cat '${token}'`,
      sandboxPolicy: { mode: 'read-only' },
    });
    expect(read.stdout.text).toBe('w\n');
    expect(read.sandbox).toEqual({ mode: 'read-only', denied: true, enforcement: backend.name });
    expect(read.stderr.text).toContain(backend.hiddenError);
    expect(existsSync(join(workspace, 'r.txt'))).toBe(false);
  });

  it('a workspace that contains the state dir: bubblewrap confines it; Landlock refuses workspace-write saying why', async () => {
    const dir = privateDir('ws-holds-state');
    const stateDir = join(dir, 'state');
    const daemon = await startDaemon({
      config: { ...backend.config },
      socketPath: join(dir, 'run', 's.sock'),
      stateDir,
    });
    const client = await daemon.connect();
    mkdirSync(join(dir, 'src'));
    await client.call(SessionOpen, { sessionId: 's1', cwd: dir, sandbox: { mode: 'workspace-write' } });
    const command = `echo top > top.txt && echo sub > src/sub.txt && cat top.txt; cat '${join(stateDir, 'token')}'`;
    if (backend.name === 'bwrap') {
      const write = await client.run({ sessionId: 's1', command });
      expect(write.stdout.text, write.stderr.text).toBe('top\n');
      expect(write.stderr.text).toContain(backend.hiddenError);
      expect(readFileSync(join(dir, 'src', 'sub.txt'), 'utf8')).toBe('sub\n');
    } else {
      const refused = await client.run({ sessionId: 's1', command }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(ExecdRpcError);
      expect((refused as ExecdRpcError).errorName).toBe('SANDBOX_UNAVAILABLE');
      expect((refused as ExecdRpcError).message).toContain('EXECD_STATE_DIR');
      console.log(`landlock, a workspace holding the state dir: ${(refused as ExecdRpcError).message}`);
      expect(existsSync(join(dir, 'top.txt'))).toBe(false);
    }
    const read = await client.run({
      sessionId: 's1',
      command: `ls src; cat '${join(stateDir, 'token')}'`,
      sandboxPolicy: { mode: 'read-only' },
    });
    expect(read.stdout.text).toBe(backend.name === 'bwrap' ? 'sub.txt\n' : '');
    expect(read.stderr.text).toContain(backend.hiddenError);
  });

  it('a workspace inside the state dir is refused in every confined mode, saying why', async () => {
    const stateDir = privateDir('state-holds-ws');
    const daemon = await startDaemon({ config: { ...backend.config }, stateDir });
    const client = await daemon.connect();
    const workspace = join(stateDir, 'ws');
    mkdirSync(workspace);
    await client.call(SessionOpen, { sessionId: 's1', cwd: workspace, sandbox: { mode: 'workspace-write' } });
    for (const mode of ['workspace-write', 'read-only'] as const) {
      const refused = await client.run({ sessionId: 's1', command: 'touch x', sandboxPolicy: { mode } }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused, mode).toBeInstanceOf(ExecdRpcError);
      expect((refused as ExecdRpcError).errorName).toBe('SANDBOX_UNAVAILABLE');
      expect((refused as ExecdRpcError).message).toContain('lies inside the daemon');
    }
    expect(existsSync(join(workspace, 'x'))).toBe(false);
  });
});
