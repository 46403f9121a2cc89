/**
 * The unprivileged condition of a container (SPEC §15), reproduced in the test: the daemon runs as
 * uid 1000 without capabilities in a user namespace whose `max_user_namespaces` is 0, where
 * bubblewrap cannot create its namespaces. There `auto` picks Landlock and every confined mode
 * enforces what it claims, for one-shot commands and for a confined terminal. Needs root (to
 * write the namespace's uid/gid maps), as the machine and `.ci/run` run the suite.
 */
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { DaemonStatus, JobKill, SessionOpen, ShellStart, TerminalOpen, TerminalRun } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';

const UNPRIVILEGED = join(import.meta.dirname, '..', 'helpers', 'unprivileged.sh');
const UID = 1000;

/** A directory owned by the unprivileged user. */
function ownedDir(path: string): string {
  mkdirSync(path, { recursive: true });
  chownSync(path, UID, UID);
  return path;
}

/** A daemon started in the unprivileged condition on a temp dir of its user's, removed after the test. */
async function startUnprivilegedDaemon() {
  if (process.getuid?.() !== 0) throw new Error('this test needs root: it writes the uid/gid maps of the namespace');
  const base = ownedDir(mkdtempSync(join(tmpdir(), 'execd-unpriv-')));
  onTestFinished(() => rmSync(base, { recursive: true, force: true }));
  const workspace = ownedDir(join(base, 'ws'));
  const daemon = await startDaemon({
    launcher: ['bash', UNPRIVILEGED],
    socketPath: join(base, 'run', 'execd.sock'),
    stateDir: join(base, 'state'),
  });
  const client = await daemon.connect();
  expect(client.info.capabilities.sandbox).toMatchObject({ backend: 'landlock' });
  return { workspace, daemon, client };
}

/** A TCP listener on loopback, closed when the test finishes. */
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

/** A node one-liner that connects somewhere and prints CONNECTED or `refused <code>`. */
function connectCommand(target: string): string {
  const script = `require('net').connect(${target}).on('connect', () => { console.log('CONNECTED'); process.exit(0); }).on('error', (e) => { console.log('refused ' + e.code); process.exit(3); })`;
  return `'${process.execPath}' -e "${script.replace(/"/g, '\\"')}"`;
}

describe('sandbox in the unprivileged condition (uid 1000, no capabilities, max_user_namespaces 0)', () => {
  it('auto picks Landlock, and every confined mode enforces what it claims', async () => {
    const { workspace, daemon, client } = await startUnprivilegedDaemon();
    // Outside the workspace and the temp dir (which workspace-write may write under Landlock).
    const outside = ownedDir(mkdtempSync('/var/tmp/execd-unpriv-outside-'));
    onTestFinished(() => rmSync(outside, { recursive: true, force: true }));
    expect(client.info.capabilities.sandbox.enforces).toEqual(
      expect.arrayContaining(['files', 'daemon-files', 'daemon-socket', 'network-off']),
    );
    await client.call(SessionOpen, {
      sessionId: 's1',
      cwd: workspace,
      // The test's own look from outside the sandbox widens to full access: declared, as SPEC §6 asks.
      sandbox: { mode: 'workspace-write', escalationTargets: ['danger-full-access'] },
    });

    // The condition itself: uid 1000, no capability, and bubblewrap refused its namespace.
    const facts = await client.run({
      sessionId: 's1',
      command: 'id -u; grep CapEff /proc/self/status; cat /proc/sys/user/max_user_namespaces; bwrap --ro-bind / / true',
      sandboxPolicy: { mode: 'danger-full-access' },
    });
    console.log(
      `unprivileged condition: ${facts.stdout.text.trim().replace(/\n/g, ' | ')} | ${facts.stderr.text.trim()}`,
    );
    expect(facts.stdout.text).toBe('1000\nCapEff:\t0000000000000000\n0\n');
    expect(facts.stderr.text).toMatch(/^bwrap: /);

    // workspace-write: inside lands, outside (a directory uid 1000 owns) is denied and reported.
    const inside = await client.run({ sessionId: 's1', command: 'echo in > in.txt && cat in.txt' });
    expect(inside).toMatchObject({
      exitCode: 0,
      sandbox: { mode: 'workspace-write', denied: false, enforcement: 'landlock' },
    });
    const denied = await client.run({ sessionId: 's1', command: `echo out > '${outside}/w.txt'` });
    expect(denied.sandbox).toEqual({ mode: 'workspace-write', denied: true, enforcement: 'landlock' });
    expect(existsSync(join(outside, 'w.txt'))).toBe(false);
    const free = await client.run({
      sessionId: 's1',
      command: `echo out > '${outside}/free.txt'`,
      sandboxPolicy: { mode: 'danger-full-access' },
    });
    expect(free.exitCode).toBe(0);

    // read-only: every write is denied, in the workspace too.
    for (const target of [
      join(workspace, 'ro.txt'),
      join(workspace, 'in.txt'),
      join(outside, 'ro.txt'),
      '/tmp/execd-unpriv-ro',
    ]) {
      const write = await client.run({
        sessionId: 's1',
        command: `echo x > '${target}'`,
        sandboxPolicy: { mode: 'read-only' },
      });
      expect(write.sandbox, target).toEqual({ mode: 'read-only', denied: true, enforcement: 'landlock' });
    }
    expect(readFileSync(join(workspace, 'in.txt'), 'utf8')).toBe('in\n');
    expect(existsSync(join(workspace, 'ro.txt'))).toBe(false);

    // The token, the state dir and the socket stay out of reach of a confined command…
    const token = readFileSync(join(daemon.stateDir, 'token'), 'utf8').trim();
    const tokenRead = await client.run({
      sessionId: 's1',
      command: `cat '${join(daemon.stateDir, 'token')}'; ls '${daemon.stateDir}'; ${connectCommand(JSON.stringify(daemon.socketPath))}`,
    });
    expect(tokenRead.stdout.text).not.toContain(token);
    expect(tokenRead.stderr.text).toMatch(/token': Permission denied|token: Permission denied/);
    expect(tokenRead.stderr.text).toMatch(/cannot open directory .*Permission denied/);
    expect(tokenRead.stdout.text).toMatch(/refused EACCES\n$/);

    // …and of a confined terminal.
    const opened = await client.call(TerminalOpen, { sessionId: 's1' });
    const terminalId = opened.terminal.id;
    const inTerminal = await client.call(TerminalRun, {
      sessionId: 's1',
      terminalId,
      command: `cat '${join(daemon.stateDir, 'token')}'; ${connectCommand(JSON.stringify(daemon.socketPath))}`,
    });
    expect(inTerminal.output).not.toContain(token);
    expect(inTerminal.output).toContain('Permission denied');
    expect(inTerminal.output).toContain('refused EACCES');

    // network 'off' stops a TCP connection to a loopback listener; on, it connects.
    const listener = await loopbackListener();
    const probe = connectCommand(`${listener.port}, '127.0.0.1'`);
    expect((await client.run({ sessionId: 's1', command: probe })).stdout.text).toBe('CONNECTED\n');
    const off = await client.run({
      sessionId: 's1',
      command: probe,
      sandboxPolicy: { mode: 'workspace-write', network: 'off' },
    });
    expect(off.stdout.text).toBe('refused EACCES\n');
    expect(listener.accepted()).toBe(1);
  });

  it('the daemon and its spawner are non-dumpable: no command of their uid reads their environ; commands stay dumpable', async () => {
    const { workspace, client } = await startUnprivilegedDaemon();
    await client.call(SessionOpen, {
      sessionId: 's1',
      cwd: workspace,
      sandbox: { mode: 'workspace-write', escalationTargets: ['danger-full-access'] },
    });
    // The parent of a command is whoever spawned it: the daemon while no other child of it lives.
    const look =
      'id -u; echo "parent $PPID"; tr "\\0" "\\n" < /proc/$PPID/environ | wc -l; head -c 1 /proc/$PPID/mem | wc -c';
    const readBy = async (mode: 'workspace-write' | 'danger-full-access') => {
      const result = await client.run({ sessionId: 's1', command: look, sandboxPolicy: { mode } });
      console.log(
        `non-dumpable (${mode}): ${JSON.stringify(result.stdout.text)} ${JSON.stringify(result.stderr.text)}`,
      );
      return result;
    };
    for (const mode of ['workspace-write', 'danger-full-access'] as const) {
      const result = await readBy(mode);
      expect(result.stdout.text).toMatch(/^1000\nparent \d+\n0\n0\n$/);
      expect(result.stderr.text).toMatch(/environ: Permission denied[\s\S]*mem.*Permission denied/);
    }
    const daemonPid = Number(/parent (\d+)/.exec((await readBy('danger-full-access')).stdout.text)![1]);

    // A live job sends the next spawns to the spawner process: its environ is as unreachable.
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'exec sleep 60' });
    onTestFinished(() => client.call(JobKill, { sessionId: 's1', jobId }).then(() => {}));
    const viaSpawner = await waitFor(async () => {
      const result = await client.run({
        sessionId: 's1',
        command: look,
        sandboxPolicy: { mode: 'danger-full-access' },
      });
      return Number(/parent (\d+)/.exec(result.stdout.text)![1]) !== daemonPid ? result : undefined;
    }, 'a run spawned by the spawner');
    console.log(
      `non-dumpable (spawner, danger-full-access): ${JSON.stringify(viaSpawner.stdout.text)} ${JSON.stringify(viaSpawner.stderr.text)}`,
    );
    expect(viaSpawner.stdout.text).toMatch(/^1000\nparent \d+\n0\n0\n$/);
    expect(viaSpawner.stderr.text).toMatch(/environ: Permission denied/);
    // The daemon (uid 1000) cannot read the spawner's smaps either: the spawner reports its own.
    const { memory } = await client.call(DaemonStatus, {});
    console.log(`daemon/status memory: ${JSON.stringify(memory)}`);
    expect(memory.map((entry) => entry.role)).toEqual(['daemon', 'spawner']);
    expect(memory.every((entry) => entry.rssBytes > 0)).toBe(true);

    // The flag resets on execve: a command, confined or not, is dumpable, and its own children
    // readable. Mid-exec a child's environ reads empty (and before it, its cmdline is the
    // parent's, which names sleep too): read until it holds PATH, for up to 5 s; an unreadable
    // environ never does.
    for (const mode of ['workspace-write', 'danger-full-access'] as const) {
      const own = await client.run({
        sessionId: 's1',
        command: `python3 -c 'import ctypes; print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))'; sleep 5 & for i in $(seq 100); do n=$(tr "\\0" "\\n" < /proc/$!/environ | grep -c '^PATH='); [ "$n" -gt 0 ] && break; sleep 0.05; done; echo "$n"; kill $!`,
        sandboxPolicy: { mode },
      });
      console.log(
        `a command's own dumpable flag and its child's environ (${mode}): ${JSON.stringify(own.stdout.text)}`,
      );
      expect(own.stdout.text).toBe('1\n1\n');
    }
  });
});
