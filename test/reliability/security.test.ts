/**
 * Issue 6, test 5 and the security promises of SPEC §2: unsafe socket and state directories are
 * refused, the token, socket and spill files are owner-only, a client of another uid cannot
 * connect, a wrong token is rejected, and `EXECD_*` never reaches a child.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { connect } from '../../client/connect.js';
import { ExecdRpcError } from '../../client/connection.js';
import { Initialize, ShellRun } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { rawConnect } from '../helpers/raw.js';

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8).padStart(4, '0');

/** A fresh private temp dir, removed when the test finishes. */
function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'execd-sec-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Runs a connect attempt to `socketPath` as `nobody`; returns what it printed. */
function connectAsNobody(socketPath: string, tokenPath: string): string {
  const script = `
    const net = require('node:net'), fs = require('node:fs');
    let token = 'unreadable';
    try { fs.readFileSync(${JSON.stringify(tokenPath)}); token = 'READ'; } catch (e) { token = e.code; }
    const s = net.connect(${JSON.stringify(socketPath)});
    s.on('connect', () => { console.log('token:' + token + ' connect:CONNECTED'); s.destroy(); });
    s.on('error', (e) => console.log('token:' + token + ' connect:' + e.code));`;
  const result = spawnSync(
    'setpriv',
    ['--reuid=nobody', '--regid=nogroup', '--clear-groups', process.execPath, '-e', script],
    {
      encoding: 'utf8',
      timeout: 20_000,
    },
  );
  if (result.error) throw result.error;
  return `${result.stdout}${result.stderr}`.trim();
}

describe('security', () => {
  it('refuses a world-writable, a group-readable and a foreign socket directory, and a world-writable state dir', async () => {
    const base = scratch();
    const cases: Array<{ name: string; prepare: (dir: string) => void; socketDir: boolean; expected: RegExp }> = [
      {
        name: 'world-writable (1777)',
        prepare: (dir) => chmodSync(dir, 0o1777),
        socketDir: true,
        expected: /refusing socket directory: .* accessible to group or others \(mode 0777\)/,
      },
      {
        name: 'group-readable (0750)',
        prepare: (dir) => chmodSync(dir, 0o750),
        socketDir: true,
        expected: /refusing socket directory: .* \(mode 0750\)/,
      },
      {
        name: 'world-writable state dir (0777)',
        prepare: (dir) => chmodSync(dir, 0o777),
        socketDir: false,
        expected: /refusing state directory: .* \(mode 0777\)/,
      },
      {
        name: 'owned by nobody',
        prepare: (dir) => chownSync(dir, 65534, 65534),
        socketDir: true,
        expected: /refusing socket directory: .* belongs to uid 65534/,
      },
    ];
    const refused: string[] = [];
    for (const [index, testCase] of cases.entries()) {
      const dir = join(base, `case-${index}`);
      mkdirSync(dir, { mode: 0o700 });
      testCase.prepare(dir);
      const options = testCase.socketDir
        ? { socketPath: join(dir, 'execd.sock') }
        : { stateDir: dir, socketPath: join(base, `run-${index}`, 'execd.sock') };
      await expect(startDaemon(options)).rejects.toThrow(testCase.expected);
      refused.push(testCase.name);
    }
    console.log(`security: daemon refused to start with ${refused.length} unsafe directories: ${refused.join(', ')}`);
  });

  it('keeps the token, socket, state dir and spill files owner-only', async () => {
    const daemon = await startDaemon({ config: { maxOutputBytes: 100 } });
    const client = await daemon.session('s1');
    const result = await client.run({ sessionId: 's1', command: 'head -c 1000 /dev/zero' });
    const spillPath = result.stdout.spillPath!;
    expect(spillPath).toBeDefined();
    const modes = {
      token: mode(join(daemon.stateDir, 'token')),
      stateDir: mode(daemon.stateDir),
      socket: mode(daemon.socketPath),
      socketDir: mode(dirname(daemon.socketPath)),
      spillRoot: mode(join(daemon.stateDir, 'spill')),
      spillSessionDir: mode(dirname(spillPath)),
      spillFile: mode(spillPath),
    };
    expect(modes).toEqual({
      token: '0600',
      stateDir: '0700',
      socket: '0600',
      socketDir: '0700',
      spillRoot: '0700',
      spillSessionDir: '0700',
      spillFile: '0600',
    });
    console.log(`security: modes ${JSON.stringify(modes)}`);
  });

  // Needs root (setpriv to nobody, chown), which is how the test machines and CI run.
  it('a client of another uid (nobody) can neither read the token nor connect', async () => {
    const daemon = await startDaemon();
    const tokenPath = join(daemon.stateDir, 'token');
    // Layer 1: the socket's directory is 0700.
    const denied = connectAsNobody(daemon.socketPath, tokenPath);
    expect(denied).toBe('token:EACCES connect:EACCES');
    // Layer 2: even with every directory on the way opened for traversal, the socket is 0600.
    chmodSync(daemon.dir, 0o711);
    chmodSync(dirname(daemon.socketPath), 0o711);
    const deniedBySocket = connectAsNobody(daemon.socketPath, tokenPath);
    chmodSync(dirname(daemon.socketPath), 0o700);
    chmodSync(daemon.dir, 0o700);
    expect(deniedBySocket).toBe('token:EACCES connect:EACCES');
    const client = await daemon.session('s1');
    expect((await client.run({ sessionId: 's1', command: 'echo still' })).stdout.text).toBe('still\n');
    console.log(
      `security: uid nobody -> "${denied}" (0700 dir), "${deniedBySocket}" (dirs 0711, socket 0600); owner still served`,
    );
  });

  it('rejects a wrong token and any request before initialize, closing that connection only', async () => {
    const daemon = await startDaemon();
    const owner = await daemon.session('s1');
    const wrong = await rawConnect(daemon.socketPath);
    const answer = await wrong.request(Initialize.method, {
      protocolVersion: 1,
      token: '0'.repeat(64),
      client: { name: 'intruder' },
    });
    expect(answer?.error).toMatchObject({ code: -32001, data: { code: 'UNAUTHORIZED' } });
    await wrong.closed;
    const early = await rawConnect(daemon.socketPath);
    const refused = await early.request(ShellRun.method, { sessionId: 's1', command: 'echo no' });
    expect(refused?.error).toMatchObject({ code: -32001, data: { code: 'UNAUTHORIZED' } });
    await early.closed;
    const error = await connect({
      socketPath: daemon.socketPath,
      stateDir: daemon.stateDir,
      token: 'not-the-token',
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExecdRpcError);
    expect((error as ExecdRpcError).errorName).toBe('UNAUTHORIZED');
    expect((await owner.run({ sessionId: 's1', command: 'echo ok' })).stdout.text).toBe('ok\n');
    console.log(
      'security: wrong token -> UNAUTHORIZED + closed; request before initialize -> UNAUTHORIZED + closed; owner still served',
    );
  });

  it('never passes EXECD_* or credential-shaped variables of the daemon to a child', async () => {
    const daemon = await startDaemon({
      env: { EXECD_LOG_EXTRA: 'x', EXECD_SOMETHING: 'y', DEPLOY_API_KEY: 'k', PLAIN_VALUE: 'kept' },
    });
    const client = await daemon.session('s1');
    const result = await client.run({ sessionId: 's1', command: 'env' });
    const names = result.stdout.text.split('\n').map((line) => line.split('=')[0]);
    // EXECD_SCOPE is the daemon's own marker (every command's unit), none of its environment.
    const leaked = names.filter(
      (name) => (name?.startsWith('EXECD_') && name !== 'EXECD_SCOPE') || name === 'DEPLOY_API_KEY',
    );
    expect(leaked).toEqual([]);
    expect(names).toContain('PLAIN_VALUE');
    console.log(`security: child env has ${names.length} variables, 0 EXECD_* or credential-shaped ones`);
  });
});
