/** The Linux file sandbox with real bwrap and a real daemon (SPEC §6). */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderResult } from '../../shared/render.js';
import { ExecdRpcError } from '../../client/connection.js';
import { SessionOpen } from '../../protocol/methods.js';
import { startDaemon, waitPidsGone } from '../helpers/daemon.js';
import { pidsWithArgument } from '../helpers/procs.js';
import { confinedPids, sandboxedSession, uniqueSleep } from '../helpers/sandbox.js';
import { waitFor } from '../helpers/wait.js';

/** The error name a rejected call carries. */
async function errorOf(promise: Promise<unknown>): Promise<ExecdRpcError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ExecdRpcError);
  return error as ExecdRpcError;
}

describe('sandbox: what the machine can enforce', () => {
  it('advertises all three modes when bwrap works', async () => {
    const daemon = await startDaemon();
    const client = await daemon.connect();
    expect([...client.info.capabilities.sandboxModes].sort()).toEqual([
      'danger-full-access',
      'read-only',
      'workspace-write',
    ]);
  });
});

describe('sandbox: workspace-write', () => {
  it('writes inside the workspace; a write to /etc or $HOME is denied and rendered with the marker', async () => {
    const { client, workspace } = await sandboxedSession({ mode: 'workspace-write' });
    const inside = await client.run({ sessionId: 's1', command: 'echo data > inside.txt && cat inside.txt' });
    expect(inside).toMatchObject({
      exitCode: 0,
      sandbox: { mode: 'workspace-write', denied: false, enforcement: 'bwrap' },
    });
    expect(readFileSync(join(workspace, 'inside.txt'), 'utf8')).toBe('data\n');

    const etc = await client.run({ sessionId: 's1', command: 'echo x > /etc/execd-sandbox-test' });
    expect(etc.exitCode).toBe(1);
    expect(etc.sandbox).toEqual({ mode: 'workspace-write', denied: true, enforcement: 'bwrap' });
    expect(existsSync('/etc/execd-sandbox-test')).toBe(false);
    expect(renderResult(etc)).toMatch(/\[sandbox: file access denied under workspace-write mode\]\n\[exit code: 1\]$/);

    const homeFile = join(homedir(), `execd-sandbox-test-${process.pid}`);
    try {
      const home = await client.run({ sessionId: 's1', command: `touch "$HOME/execd-sandbox-test-${process.pid}"` });
      expect(home.sandbox).toMatchObject({ denied: true });
      expect(existsSync(homeFile)).toBe(false);
    } finally {
      rmSync(homeFile, { force: true });
    }
  });

  it('gives a private temp dir that the host never sees', async () => {
    const { client } = await sandboxedSession({ mode: 'workspace-write' });
    const name = `execd-private-${process.pid}-${Date.now()}`;
    const result = await client.run({ sessionId: 's1', command: `echo t > /tmp/${name} && cat /tmp/${name}` });
    expect(result).toMatchObject({ exitCode: 0, stdout: { text: 't\n' }, sandbox: { denied: false } });
    expect(existsSync(join('/tmp', name))).toBe(false);
  });
});

describe('sandbox: read-only', () => {
  it('denies every write outside the private temp dir; reads work', async () => {
    const { client, workspace } = await sandboxedSession({ mode: 'read-only' });
    const varTmp = `/var/tmp/execd-ro-test-${process.pid}`;
    writeFileSync(join(workspace, 'readme.txt'), 'hello\n');
    const read = await client.run({
      sessionId: 's1',
      command: 'cat readme.txt && head -c 4 /etc/hostname >/dev/null && echo ok',
    });
    expect(read).toMatchObject({
      exitCode: 0,
      stdout: { text: 'hello\nok\n' },
      sandbox: { mode: 'read-only', denied: false, enforcement: 'bwrap' },
    });

    for (const target of [
      join(workspace, 'new.txt'),
      join(workspace, 'readme.txt'),
      '/etc/execd-ro-test',
      varTmp,
      join(homedir(), 'execd-ro-test'),
    ]) {
      const write = await client.run({ sessionId: 's1', command: `echo x > '${target}'` });
      expect(write.sandbox, target).toEqual({ mode: 'read-only', denied: true, enforcement: 'bwrap' });
    }
    expect(existsSync(join(workspace, 'new.txt'))).toBe(false);
    expect(readFileSync(join(workspace, 'readme.txt'), 'utf8')).toBe('hello\n');
    expect(existsSync(varTmp)).toBe(false);

    const tmp = await client.run({ sessionId: 's1', command: 'echo t > /tmp/scratch && cat /tmp/scratch' });
    expect(tmp).toMatchObject({ exitCode: 0, sandbox: { denied: false } });
  });

  it('also denies a write made by a descendant, and mkdir, rm and mv', async () => {
    const { client, workspace } = await sandboxedSession({ mode: 'read-only' });
    writeFileSync(join(workspace, 'keep.txt'), 'k');
    for (const command of [
      'mkdir sub',
      'rm keep.txt',
      'mv keep.txt moved.txt',
      "python3 -c \"open('p.txt','w')\" || bash -c 'touch p.txt'",
    ]) {
      const result = await client.run({ sessionId: 's1', command });
      expect(result.sandbox?.denied, command).toBe(true);
      expect(result.exitCode, command).not.toBe(0);
    }
    expect(readFileSync(join(workspace, 'keep.txt'), 'utf8')).toBe('k');
  });
});

describe('sandbox: danger-full-access and policy resolution', () => {
  it('runs danger-full-access unconfined and reports denied false without enforcement', async () => {
    const { client, daemon } = await sandboxedSession({ mode: 'danger-full-access' });
    const outside = join(daemon.dir, 'free.txt');
    const result = await client.run({ sessionId: 's1', command: `echo free > '${outside}'` });
    expect(result.exitCode).toBe(0);
    expect(result.sandbox).toEqual({ mode: 'danger-full-access', denied: false });
    expect(readFileSync(outside, 'utf8')).toBe('free\n');
  });

  it('uses defaultSandboxMode when neither session nor request names a mode', async () => {
    const { client } = await sandboxedSession(undefined, { config: { defaultSandboxMode: 'read-only' } });
    const result = await client.run({ sessionId: 's1', command: 'touch x' });
    expect(result.sandbox).toEqual({ mode: 'read-only', denied: true, enforcement: 'bwrap' });
  });

  it("runs a request's wider sandboxPolicy under that policy when the session declared it an escalation target", async () => {
    const { client, workspace } = await sandboxedSession({ mode: 'read-only', escalationTargets: ['workspace-write'] });
    const denied = await client.run({ sessionId: 's1', command: 'touch a.txt' });
    expect(denied.sandbox?.denied).toBe(true);
    const widened = await client.run({
      sessionId: 's1',
      command: 'touch a.txt',
      sandboxPolicy: { mode: 'workspace-write' },
    });
    expect(widened).toMatchObject({
      exitCode: 0,
      sandbox: { mode: 'workspace-write', denied: false, enforcement: 'bwrap' },
    });
    expect(existsSync(join(workspace, 'a.txt'))).toBe(true);
  });
});

describe('sandbox: the daemon stays out of reach', () => {
  it('hides the token and the socket, and keeps the session spill files readable', async () => {
    const { client, daemon } = await sandboxedSession({
      mode: 'workspace-write',
      escalationTargets: ['danger-full-access'],
    });
    const token = readFileSync(join(daemon.stateDir, 'token'), 'utf8').trim();
    const tokenRead = await client.run({
      sessionId: 's1',
      command: `cat '${join(daemon.stateDir, 'token')}'; ls -A '${daemon.stateDir}'`,
    });
    expect(tokenRead.stdout.text).not.toContain(token);
    expect(tokenRead.stderr.text).toContain('No such file or directory');

    const connectScript = `require('net').connect(${JSON.stringify(daemon.socketPath)}).on('connect', () => { console.log('CONNECTED'); process.exit(0); }).on('error', (e) => { console.log('refused ' + e.code); process.exit(3); })`;
    const socketTry = await client.run({
      sessionId: 's1',
      command: `'${process.execPath}' -e "${connectScript.replace(/"/g, '\\"')}"`,
    });
    expect(socketTry.stdout.text).toMatch(/^refused (ENOENT|ECONNREFUSED|EACCES)\n$/);
    expect(socketTry.exitCode).toBe(3);

    // The same probe unconfined does reach the socket: the test really tests the sandbox.
    const free = await client.run({
      sessionId: 's1',
      command: `'${process.execPath}' -e "${connectScript.replace(/"/g, '\\"')}"`,
      sandboxPolicy: { mode: 'danger-full-access' },
    });
    expect(free.stdout.text).toBe('CONNECTED\n');

    const spilled = await client.run({ sessionId: 's1', command: 'seq 1 2000', stdoutMaxBytes: 100 });
    expect(spilled.stdout.spillPath).toBeDefined();
    const reread = await client.run({ sessionId: 's1', command: `wc -l < '${spilled.stdout.spillPath}'` });
    expect(reread).toMatchObject({ exitCode: 0, stdout: { text: '2000\n' } });
    // Another session's spill files stay out of sight.
    const other = await daemon.connect();
    await other.call(SessionOpen, { sessionId: 's2', cwd: daemon.dir });
    const foreign = await other.run({ sessionId: 's2', command: 'seq 1 2000', stdoutMaxBytes: 100 });
    expect(foreign.stdout.spillPath).toBeDefined();
    const peek = await client.run({ sessionId: 's1', command: `wc -l < '${foreign.stdout.spillPath}'` });
    expect(peek.exitCode).not.toBe(0);
    expect(peek.stderr.text).toContain('No such file or directory');
  });
});

describe('sandbox: killing a confined run', () => {
  it('a timeout leaves no process alive inside or outside the sandbox', async () => {
    const { client } = await sandboxedSession({ mode: 'workspace-write' }, { config: { graceMs: 500 } });
    const token = uniqueSleep();
    let output = '';
    const running = client.run(
      { sessionId: 's1', command: `sleep ${token} & echo started; sleep ${token}`, timeoutMs: 5000 },
      { onOutput: ({ text }) => (output += text) },
    );
    await waitFor(() => output.includes('started'), 'the command to start');
    const pids = await confinedPids(token);
    const result = await running;
    expect(result).toMatchObject({
      timedOut: true,
      aborted: false,
      exitCode: null,
      signal: 'SIGTERM',
      sandbox: { mode: 'workspace-write', enforcement: 'bwrap' },
    });
    expect(pids).toContain(result.pid);
    expect(await waitPidsGone(pids, 1000)).toEqual([]);
    expect(pidsWithArgument(token)).toEqual([]);
  });

  it('a cancel leaves no process alive inside or outside the sandbox, also one that ignores SIGTERM', async () => {
    const { client } = await sandboxedSession({ mode: 'read-only' }, { config: { graceMs: 300 } });
    const token = uniqueSleep();
    let output = '';
    const controller = new AbortController();
    const running = client.run(
      { sessionId: 's1', command: `trap '' TERM; sleep ${token} & echo started; sleep ${token}` },
      { signal: controller.signal, onOutput: ({ text }) => (output += text) },
    );
    await waitFor(() => output.includes('started'), 'the command to start');
    const pids = await confinedPids(token);
    controller.abort();
    const result = await running;
    expect(result).toMatchObject({ aborted: true, timedOut: false, signal: 'SIGKILL' });
    expect(await waitPidsGone(pids, 1000)).toEqual([]);
    expect(pidsWithArgument(token)).toEqual([]);
  });
});

describe('sandbox: exit facts', () => {
  it('keeps exit code 0 of a confined command that traps TERM, and still says it timed out', async () => {
    const { client } = await sandboxedSession({ mode: 'read-only' });
    const result = await client.run({
      sessionId: 's1',
      command: "trap 'exit 0' TERM; echo started; sleep 30 & wait",
      timeoutMs: 3000,
    });
    expect(result).toMatchObject({
      exitCode: 0,
      signal: null,
      timedOut: true,
      aborted: false,
      stdout: { text: 'started\n' },
    });
  });

  it('reports the exit code of a confined command as it is', async () => {
    const { client } = await sandboxedSession({ mode: 'read-only' });
    expect(await client.run({ sessionId: 's1', command: 'exit 143' })).toMatchObject({ exitCode: 143, signal: null });
    expect(await client.run({ sessionId: 's1', command: 'exit 7' })).toMatchObject({ exitCode: 7, signal: null });
  });
});

describe('sandbox: fail closed', () => {
  function daemonWithoutBwrap() {
    return sandboxedSession(
      { mode: 'workspace-write', escalationTargets: ['danger-full-access'] },
      { env: { EXECD_BWRAP: '/nonexistent/bwrap' } },
    );
  }

  it('without a working bwrap: only danger-full-access is advertised and a confined run is SANDBOX_UNAVAILABLE, never run', async () => {
    const { client, workspace } = await daemonWithoutBwrap();
    expect(client.info.capabilities.sandboxModes).toEqual(['danger-full-access']);
    const error = await errorOf(client.run({ sessionId: 's1', command: 'touch ran.txt' }));
    expect(error.errorName).toBe('SANDBOX_UNAVAILABLE');
    expect(error.message).toContain('workspace-write');
    const readOnly = await errorOf(
      client.run({ sessionId: 's1', command: 'touch ran.txt', sandboxPolicy: { mode: 'read-only' } }),
    );
    expect(readOnly.errorName).toBe('SANDBOX_UNAVAILABLE');
    expect(existsSync(join(workspace, 'ran.txt'))).toBe(false);

    const free = await client.run({
      sessionId: 's1',
      command: 'touch ran.txt',
      sandboxPolicy: { mode: 'danger-full-access' },
    });
    expect(free).toMatchObject({ exitCode: 0, sandbox: { mode: 'danger-full-access', denied: false } });
    expect(existsSync(join(workspace, 'ran.txt'))).toBe(true);
  });

  it('a runner that fails before the command ran is SANDBOX_UNAVAILABLE, not a result', async () => {
    const { client, workspace } = await sandboxedSession();
    const error = await errorOf(
      client.run({
        sessionId: 's1',
        command: 'touch ran.txt',
        sandboxPolicy: { mode: 'workspace-write', workspaceRoot: join(workspace, 'missing') },
      }),
    );
    expect(error.errorName).toBe('SANDBOX_UNAVAILABLE');
    expect(error.message).toContain('bwrap: ');
    expect(existsSync(join(workspace, 'ran.txt'))).toBe(false);
  });

  it('a confined command that fails by itself is a result, not a runner failure', async () => {
    const { client } = await sandboxedSession({ mode: 'read-only' });
    const result = await client.run({ sessionId: 's1', command: 'echo "bwrap-like but not bwrap" >&2; exit 1' });
    expect(result).toMatchObject({ exitCode: 1, sandbox: { denied: false } });
  });
});
