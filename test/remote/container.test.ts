/**
 * The daemon in a real container (SPEC §15): podman with the runtime's default security (its
 * seccomp profile and capability set, no added privilege), as uid 1000, from the local base image
 * `execd-base` (`.ci/container-base` builds it without a registry; `.ci/run` runs it). The built
 * execd (dist/, node_modules/, the host's node) is mounted read-only. The host connects over the
 * daemon's socket in a bind-mounted directory and checks that `auto` chose Landlock and that every
 * confined mode enforces what it claims.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { connect } from '../../client/connect.js';
import { SessionOpen, ShellStart } from '../../protocol/methods.js';
import { waitFor } from '../helpers/wait.js';

const IMAGE = 'execd-base';
const REPO = join(import.meta.dirname, '..', '..');
const UID = 1000;

/** Why the container test cannot run here, or undefined when it can. */
function missingPrerequisite(): string | undefined {
  if (spawnSync('podman', ['--version']).status !== 0) return 'podman is not installed';
  if (spawnSync('runc', ['--version']).status !== 0) return 'runc is not installed (podman here needs --runtime runc)';
  if (spawnSync('podman', ['image', 'exists', IMAGE]).status !== 0)
    return `the local base image ${IMAGE} is missing: run .ci/container-base (debootstrap + podman import)`;
  return undefined;
}

function podman(args: string[]): string {
  return execFileSync('podman', ['--runtime', 'runc', ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** A container limit for `ulimit -<flag>` (`n` open files, `u` processes): 4096, or the soft limit here if lower. */
function limit(flag: 'n' | 'u'): number {
  const value = execFileSync('bash', ['-c', `ulimit -S${flag}`], { encoding: 'utf8' }).trim();
  return value === 'unlimited' ? 4096 : Math.min(4096, Number(value));
}

/** A directory owned by the container's user. */
function ownedDir(path: string): string {
  mkdirSync(path, { recursive: true });
  chownSync(path, UID, UID);
  return path;
}

describe('the daemon in a container with the runtime defaults, as a non-root user', () => {
  it('auto chooses Landlock, and every confined mode enforces what it claims', { timeout: 180_000 }, async () => {
    const missing = missingPrerequisite();
    if (missing) throw new Error(`cannot run the container test: ${missing}`);
    const base = ownedDir(mkdtempSync(join(tmpdir(), 'execd-ct-')));
    onTestFinished(() => rmSync(base, { recursive: true, force: true }));
    const workspace = ownedDir(join(base, 'ws'));
    const socketPath = join(base, 'run', 'execd.sock');
    const stateDir = join(base, 'state');
    const name = `execd-ct-${process.pid}-${Date.now()}`;
    const mounts = [
      ['dist', '/opt/execd/dist'],
      ['node_modules', '/opt/execd/node_modules'],
      ['package.json', '/opt/execd/package.json'],
    ].flatMap(([from, to]) => ['-v', `${realpathSync(join(REPO, from!))}:${to}:ro`]);
    // Registered first: a container that was created but failed to start is removed too.
    onTestFinished(() => {
      spawnSync('podman', ['--runtime', 'runc', 'rm', '-f', '-t', '0', name]);
    });
    podman([
      'run',
      '-d',
      '--name',
      name,
      '--user',
      `${UID}:${UID}`,
      // podman here needs explicit limits, below this process's own hard ones.
      '--ulimit',
      `nofile=${limit('n')}:${limit('n')}`,
      '--ulimit',
      `nproc=${limit('u')}:${limit('u')}`,
      '-v',
      `${process.execPath}:/usr/local/bin/node:ro`,
      ...mounts,
      '-v',
      `${base}:${base}`,
      IMAGE,
      '/usr/local/bin/node',
      '/opt/execd/dist/client/cli/main.js',
      'serve',
      '--socket',
      socketPath,
      '--state-dir',
      stateDir,
    ]);
    await waitFor(() => existsSync(socketPath) && existsSync(join(stateDir, 'token')), 'the daemon in the container', {
      timeoutMs: 60_000,
    });
    const client = await connect({ socketPath, stateDir, clientName: 'container-test' });
    onTestFinished(() => client.close());
    const { sandbox } = client.info.capabilities;
    console.log(`container: ${JSON.stringify(sandbox)}`);
    expect(sandbox).toMatchObject({ backend: 'landlock' });
    expect(sandbox.enforces).toEqual(expect.arrayContaining(['files', 'daemon-files', 'daemon-socket', 'network-off']));
    await client.call(SessionOpen, {
      sessionId: 's1',
      cwd: workspace,
      // The test's own look from outside the sandbox widens to full access: declared, as SPEC §6 asks.
      sandbox: { mode: 'workspace-write', escalationTargets: ['danger-full-access'] },
    });

    // The container's condition: uid 1000, no effective capability, and bwrap refused (a fresh /proc in its pid namespace).
    const facts = await client.run({
      sessionId: 's1',
      command: 'id -u; grep CapEff /proc/self/status; bwrap --ro-bind / / --unshare-pid --proc /proc true',
      sandboxPolicy: { mode: 'danger-full-access' },
    });
    console.log(`container: ${facts.stdout.text.trim().replace(/\n/g, ' | ')} | ${facts.stderr.text.trim()}`);
    expect(facts.stdout.text).toBe('1000\nCapEff:\t0000000000000000\n');
    expect(facts.stderr.text).toMatch(/^bwrap: /);

    const inside = await client.run({ sessionId: 's1', command: 'echo in > in.txt && cat in.txt' });
    expect(inside).toMatchObject({ exitCode: 0, sandbox: { denied: false, enforcement: 'landlock' } });
    const outside = await client.run({ sessionId: 's1', command: 'echo x > /var/tmp/execd-ct-out' });
    expect(outside.sandbox).toEqual({ mode: 'workspace-write', denied: true, enforcement: 'landlock' });
    const free = await client.run({
      sessionId: 's1',
      command: 'echo x > /var/tmp/execd-ct-out && rm /var/tmp/execd-ct-out',
      sandboxPolicy: { mode: 'danger-full-access' },
    });
    expect(free.exitCode).toBe(0);

    const readOnly = await client.run({
      sessionId: 's1',
      command: 'echo x > ro.txt',
      sandboxPolicy: { mode: 'read-only' },
    });
    expect(readOnly.sandbox).toEqual({ mode: 'read-only', denied: true, enforcement: 'landlock' });
    expect(existsSync(join(workspace, 'ro.txt'))).toBe(false);

    const probe = (target: string) =>
      `node -e "require('net').connect(${target}).on('connect', () => { console.log('CONNECTED'); process.exit(0); }).on('error', (e) => { console.log('refused ' + e.code); process.exit(3); })"`;
    const daemonTry = await client.run({
      sessionId: 's1',
      command: `cat '${join(stateDir, 'token')}'; ${probe(`'${socketPath}'`)}`,
    });
    expect(daemonTry.stderr.text).toContain('Permission denied');
    expect(daemonTry.stdout.text).toBe('refused EACCES\n');

    // network 'off' against a listener on the container's loopback, started unconfined.
    await client.call(ShellStart, {
      sessionId: 's1',
      command: `node -e "require('net').createServer((s) => s.end()).listen(7801, '127.0.0.1')"`,
      sandboxPolicy: { mode: 'danger-full-access' },
    });
    await waitFor(
      async () =>
        (await client.run({ sessionId: 's1', command: probe(`7801, '127.0.0.1'`) })).stdout.text === 'CONNECTED\n',
      'the loopback listener',
    );
    const off = await client.run({
      sessionId: 's1',
      command: probe(`7801, '127.0.0.1'`),
      sandboxPolicy: { mode: 'workspace-write', network: 'off' },
    });
    expect(off.stdout.text).toBe('refused EACCES\n');
  });
});
