/** The Linux file sandbox with a real daemon, once per runner: bubblewrap and Landlock (SPEC §6, §15). */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { renderResult } from '../../shared/render.js';
import { ExecdRpcError } from '../../client/connection.js';
import { DaemonStatus, SessionOpen } from '../../protocol/methods.js';
import type { SessionSandbox } from '../../protocol/sandbox.js';
import { startDaemon, waitPidsGone, type TestDaemonOptions } from '../helpers/daemon.js';
import { pidsWithArgument } from '../helpers/procs.js';
import { BACKENDS, confinedPids, sandboxedSession, uniqueSleep } from '../helpers/sandbox.js';
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

/** A TCP listener on loopback for the network tests, closed when the test finishes. */
async function loopbackListener(): Promise<{ port: number; accepted: () => number }> {
  let accepted = 0;
  const server = createServer((socket) => {
    accepted++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port: (server.address() as AddressInfo).port, accepted: () => accepted };
}

/** A command that connects to `port` on loopback and says whether it could. */
function connectProbe(port: number): string {
  const script = `require('net').connect(${port}, '127.0.0.1').on('connect', () => { console.log('CONNECTED'); process.exit(0); }).on('error', (e) => { console.log('refused ' + e.code); process.exit(3); })`;
  return `'${process.execPath}' -e "${script.replace(/"/g, '\\"')}"`;
}

describe.each(BACKENDS)('sandbox under $name', (backend) => {
  const withBackend = (options: TestDaemonOptions = {}): TestDaemonOptions => ({
    ...options,
    config: { ...backend.config, ...options.config },
  });
  const session = (sandbox?: SessionSandbox, options?: TestDaemonOptions) =>
    sandboxedSession(sandbox, withBackend(options));

  describe('sandbox: what the machine can enforce', () => {
    it('advertises all three modes and names the runner and what it enforces', async () => {
      const daemon = await startDaemon(withBackend());
      const client = await daemon.connect();
      expect([...client.info.capabilities.sandboxModes].sort()).toEqual([
        'danger-full-access',
        'read-only',
        'workspace-write',
      ]);
      const { sandbox } = client.info.capabilities;
      expect(sandbox.backend).toBe(backend.name);
      expect(sandbox.enforces).toEqual(expect.arrayContaining(['files', 'daemon-files', 'network-off']));
      expect(sandbox.enforces.includes('processes')).toBe(backend.name === 'bwrap');
      expect(sandbox.enforces).toContain('daemon-socket');
      if (backend.name === 'landlock') expect(sandbox.landlockAbi).toBeGreaterThanOrEqual(4);
      expect((await client.call(DaemonStatus, {})).sandbox).toEqual(sandbox);
    });
  });

  describe('sandbox: workspace-write', () => {
    it('writes inside the workspace; a write to /etc or $HOME is denied and rendered with the marker', async () => {
      const { client, workspace } = await session({ mode: 'workspace-write' });
      const inside = await client.run({ sessionId: 's1', command: 'echo data > inside.txt && cat inside.txt' });
      expect(inside).toMatchObject({
        exitCode: 0,
        sandbox: { mode: 'workspace-write', denied: false, enforcement: backend.name },
      });
      expect(readFileSync(join(workspace, 'inside.txt'), 'utf8')).toBe('data\n');

      const etc = await client.run({ sessionId: 's1', command: 'echo x > /etc/execd-sandbox-test' });
      expect(etc.exitCode).toBe(1);
      expect(etc.sandbox).toEqual({ mode: 'workspace-write', denied: true, enforcement: backend.name });
      expect(existsSync('/etc/execd-sandbox-test')).toBe(false);
      expect(renderResult(etc)).toMatch(
        /\[sandbox: file access denied under workspace-write mode\]\n\[exit code: 1\]$/,
      );

      const homeFile = join(homedir(), `execd-sandbox-test-${process.pid}`);
      try {
        const home = await client.run({ sessionId: 's1', command: `touch "$HOME/execd-sandbox-test-${process.pid}"` });
        expect(home.sandbox).toMatchObject({ denied: true });
        expect(existsSync(homeFile)).toBe(false);
      } finally {
        rmSync(homeFile, { force: true });
      }
    });

    it(
      backend.privateTmp
        ? 'gives a private temp dir that the host never sees'
        : "writes its session's own TMPDIR; the host's temp dir is denied",
      async () => {
        const { client, daemon } = await session({ mode: 'workspace-write' });
        const dir = mkdtempSync(join(tmpdir(), 'execd-tmp-test-'));
        onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
        const target = backend.privateTmp ? `/tmp/execd-private-${process.pid}-${Date.now()}` : '"$TMPDIR/f"';
        const result = await client.run({ sessionId: 's1', command: `echo t > ${target} && cat ${target}` });
        expect(result).toMatchObject({ exitCode: 0, stdout: { text: 't\n' }, sandbox: { denied: false } });
        if (backend.privateTmp) expect(existsSync(target)).toBe(false);
        else {
          expect(readFileSync(join(daemon.stateDir, 'tmp', 's1', 'f'), 'utf8')).toBe('t\n');
          const host = await client.run({ sessionId: 's1', command: `echo t > '${join(dir, 'f')}'` });
          expect(host.sandbox).toMatchObject({ denied: true });
          expect(existsSync(join(dir, 'f'))).toBe(false);
        }
      },
    );
  });

  describe('sandbox: read-only', () => {
    it('denies every write (outside the private temp dir of bwrap); reads work', async () => {
      const { client, workspace } = await session({ mode: 'read-only' });
      const varTmp = `/var/tmp/execd-ro-test-${process.pid}`;
      writeFileSync(join(workspace, 'readme.txt'), 'hello\n');
      const read = await client.run({
        sessionId: 's1',
        command: 'cat readme.txt && head -c 4 /etc/hostname >/dev/null && echo ok',
      });
      expect(read).toMatchObject({
        exitCode: 0,
        stdout: { text: 'hello\nok\n' },
        sandbox: { mode: 'read-only', denied: false, enforcement: backend.name },
      });

      for (const target of [
        join(workspace, 'new.txt'),
        join(workspace, 'readme.txt'),
        '/etc/execd-ro-test',
        varTmp,
        join(homedir(), 'execd-ro-test'),
      ]) {
        const write = await client.run({ sessionId: 's1', command: `echo x > '${target}'` });
        expect(write.sandbox, target).toEqual({ mode: 'read-only', denied: true, enforcement: backend.name });
      }
      expect(existsSync(join(workspace, 'new.txt'))).toBe(false);
      expect(readFileSync(join(workspace, 'readme.txt'), 'utf8')).toBe('hello\n');
      expect(existsSync(varTmp)).toBe(false);

      const tmp = await client.run({ sessionId: 's1', command: 'echo t > /tmp/scratch && cat /tmp/scratch' });
      expect(tmp.exitCode === 0).toBe(backend.privateTmp);
      expect(tmp.sandbox?.denied).toBe(!backend.privateTmp);
    });

    it('also denies a write made by a descendant, and mkdir, rm and mv', async () => {
      const { client, workspace } = await session({ mode: 'read-only' });
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
      const { client, daemon } = await session({ mode: 'danger-full-access' });
      const outside = join(daemon.dir, 'free.txt');
      const result = await client.run({ sessionId: 's1', command: `echo free > '${outside}'` });
      expect(result.exitCode).toBe(0);
      expect(result.sandbox).toEqual({ mode: 'danger-full-access', denied: false });
      expect(readFileSync(outside, 'utf8')).toBe('free\n');
    });

    it('uses defaultSandboxMode when neither session nor request names a mode', async () => {
      const { client } = await session(undefined, { config: { defaultSandboxMode: 'read-only' } });
      const result = await client.run({ sessionId: 's1', command: 'touch x' });
      expect(result.sandbox).toEqual({ mode: 'read-only', denied: true, enforcement: backend.name });
    });

    it("runs a request's wider sandboxPolicy under that policy when the session declared it an escalation target", async () => {
      const { client, workspace } = await session({ mode: 'read-only', escalationTargets: ['workspace-write'] });
      const denied = await client.run({ sessionId: 's1', command: 'touch a.txt' });
      expect(denied.sandbox?.denied).toBe(true);
      const widened = await client.run({
        sessionId: 's1',
        command: 'touch a.txt',
        sandboxPolicy: { mode: 'workspace-write' },
      });
      expect(widened).toMatchObject({
        exitCode: 0,
        sandbox: { mode: 'workspace-write', denied: false, enforcement: backend.name },
      });
      expect(existsSync(join(workspace, 'a.txt'))).toBe(true);
    });
  });

  describe('sandbox: the daemon stays out of reach', () => {
    it('hides the token and the socket, and keeps the session spill files readable', async () => {
      const { client, daemon } = await session({ mode: 'workspace-write', escalationTargets: ['danger-full-access'] });
      const token = readFileSync(join(daemon.stateDir, 'token'), 'utf8').trim();
      const tokenRead = await client.run({
        sessionId: 's1',
        command: `cat '${join(daemon.stateDir, 'token')}'; ls -A '${daemon.stateDir}'`,
      });
      expect(tokenRead.stdout.text).not.toContain(token);
      expect(tokenRead.stderr.text).toContain(backend.hiddenError);

      const connectScript = `require('net').connect(${JSON.stringify(daemon.socketPath)}).on('connect', () => { console.log('CONNECTED'); process.exit(0); }).on('error', (e) => { console.log('refused ' + e.code); process.exit(3); })`;
      const socketTry = await client.run({
        sessionId: 's1',
        command: `'${process.execPath}' -e "${connectScript.replace(/"/g, '\\"')}"`,
      });
      // bwrap masks the socket's directory; Landlock's launcher refuses new Unix sockets.
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
      expect(peek.stderr.text).toContain(backend.hiddenError);
    });
  });

  describe('sandbox: killing a confined run', () => {
    it('a timeout leaves no process alive inside or outside the sandbox', async () => {
      const { client } = await session({ mode: 'workspace-write' }, { config: { graceMs: 500 } });
      const token = uniqueSleep();
      let output = '';
      const running = client.run(
        { sessionId: 's1', command: `sleep ${token} & echo started; sleep ${token}`, timeoutMs: 5000 },
        { onOutput: ({ text }) => (output += text) },
      );
      await waitFor(() => output.includes('started'), 'the command to start');
      const pids = await confinedPids(token, backend.pidsOfTwoSleeps);
      const result = await running;
      expect(result).toMatchObject({
        timedOut: true,
        aborted: false,
        exitCode: null,
        signal: 'SIGTERM',
        sandbox: { mode: 'workspace-write', enforcement: backend.name },
      });
      expect(pids).toContain(result.pid);
      expect(await waitPidsGone(pids, 1000)).toEqual([]);
      expect(pidsWithArgument(token)).toEqual([]);
    });

    it('a cancel leaves no process alive inside or outside the sandbox, also one that ignores SIGTERM', async () => {
      const { client } = await session({ mode: 'read-only' }, { config: { graceMs: 300 } });
      const token = uniqueSleep();
      let output = '';
      const controller = new AbortController();
      const running = client.run(
        { sessionId: 's1', command: `trap '' TERM; sleep ${token} & echo started; sleep ${token}` },
        { signal: controller.signal, onOutput: ({ text }) => (output += text) },
      );
      await waitFor(() => output.includes('started'), 'the command to start');
      const pids = await confinedPids(token, backend.pidsOfTwoSleeps);
      controller.abort();
      const result = await running;
      expect(result).toMatchObject({ aborted: true, timedOut: false, signal: 'SIGKILL' });
      expect(await waitPidsGone(pids, 1000)).toEqual([]);
      expect(pidsWithArgument(token)).toEqual([]);
    });
  });

  describe('sandbox: exit facts', () => {
    it('keeps exit code 0 of a confined command that traps TERM, and still says it timed out', async () => {
      const { client } = await session({ mode: 'read-only' });
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
      const { client } = await session({ mode: 'read-only' });
      expect(await client.run({ sessionId: 's1', command: 'exit 143' })).toMatchObject({ exitCode: 143, signal: null });
      expect(await client.run({ sessionId: 's1', command: 'exit 7' })).toMatchObject({ exitCode: 7, signal: null });
    });
  });

  describe('sandbox: fail closed', () => {
    function daemonWithoutBwrap() {
      return session(
        { mode: 'workspace-write', escalationTargets: ['danger-full-access'] },
        { env: { EXECD_BWRAP: '/nonexistent/bwrap' }, config: { sandboxBackend: 'bwrap' } },
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
      const { client, workspace } = await session();
      const error = await errorOf(
        client.run({
          sessionId: 's1',
          command: 'touch ran.txt',
          sandboxPolicy: { mode: 'workspace-write', workspaceRoot: join(workspace, 'missing') },
        }),
      );
      expect(error.errorName).toBe('SANDBOX_UNAVAILABLE');
      expect(error.message).toContain(`${backend.name}: `);
      expect(existsSync(join(workspace, 'ran.txt'))).toBe(false);
    });

    it('a confined command that fails by itself is a result, not a runner failure', async () => {
      const { client } = await session({ mode: 'read-only' });
      const result = await client.run({ sessionId: 's1', command: 'echo "bwrap-like but not bwrap" >&2; exit 1' });
      expect(result).toMatchObject({ exitCode: 1, sandbox: { denied: false } });
    });
  });

  describe("sandbox: network 'off'", () => {
    it('stops a TCP connection to a loopback listener, per request and as the session default; on by default', async () => {
      const listener = await loopbackListener();
      const probe = connectProbe(listener.port);
      const { client } = await session({ mode: 'workspace-write' });
      const on = await client.run({ sessionId: 's1', command: probe });
      expect(on.stdout.text).toBe('CONNECTED\n');

      const off = await client.run({
        sessionId: 's1',
        command: probe,
        sandboxPolicy: { mode: 'workspace-write', network: 'off' },
      });
      console.log(`${backend.name} network off: ${off.stdout.text.trim()}`);
      expect(off.stdout.text).toMatch(/^refused (EACCES|ENETUNREACH|ECONNREFUSED|EPERM)\n$/);
      expect(off.exitCode).toBe(3);

      const other = await client.call(SessionOpen, {
        sessionId: 's2',
        cwd: tmpdir(),
        sandbox: { mode: 'read-only', network: 'off' },
      });
      expect(other.sessionId).toBe('s2');
      const byDefault = await client.run({ sessionId: 's2', command: probe });
      expect(byDefault.stdout.text).toMatch(/^refused /);
      expect(listener.accepted()).toBe(1);
    });

    it("refuses network 'off' with danger-full-access, which has no runner to enforce it", async () => {
      const { client } = await session({ mode: 'danger-full-access' });
      const error = await errorOf(
        client.run({ sessionId: 's1', command: 'true', sandboxPolicy: { mode: 'danger-full-access', network: 'off' } }),
      );
      expect(error.errorName).toBe('SANDBOX_UNAVAILABLE');
      expect(error.message).toContain("network 'off'");
    });
  });
});

describe('sandboxBackend auto', () => {
  it('takes bwrap where it works and falls back to Landlock where it does not', async () => {
    const works = await startDaemon();
    expect((await works.connect()).info.capabilities.sandbox.backend).toBe('bwrap');
    const { client, workspace } = await sandboxedSession(
      { mode: 'workspace-write' },
      { env: { EXECD_BWRAP: '/nonexistent/bwrap' } },
    );
    expect(client.info.capabilities.sandbox.backend).toBe('landlock');
    const result = await client.run({ sessionId: 's1', command: 'touch in.txt; touch /etc/execd-auto-test' });
    expect(result.sandbox).toEqual({ mode: 'workspace-write', denied: true, enforcement: 'landlock' });
    expect(existsSync(join(workspace, 'in.txt'))).toBe(true);
    expect(existsSync('/etc/execd-auto-test')).toBe(false);
  });
});
