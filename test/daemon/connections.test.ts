/** Connections, authentication, socket permissions, and isolation between clients (SPEC §2, §1.7). */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { connect } from '../../client/connect.js';
import { SessionOpen } from '../../protocol/methods.js';
import { CLI, startDaemon, waitPidsGone } from '../helpers/daemon.js';
import { pidsIn } from '../helpers/procs.js';
import { rawConnect } from '../helpers/raw.js';
import { waitFor } from '../helpers/wait.js';

describe('connections', () => {
  it('creates the socket 0600 in a 0700 directory and the token 0600', async () => {
    const daemon = await startDaemon();
    expect(statSync(daemon.socketPath).mode & 0o777).toBe(0o600);
    expect(statSync(dirname(daemon.socketPath)).mode & 0o777).toBe(0o700);
    const token = join(daemon.stateDir, 'token');
    expect(statSync(token).mode & 0o777).toBe(0o600);
    expect(readFileSync(token, 'utf8')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses a wrong token with UNAUTHORIZED and closes the connection', async () => {
    const daemon = await startDaemon();
    await expect(connect({ socketPath: daemon.socketPath, token: 'f'.repeat(64) })).rejects.toMatchObject({
      errorName: 'UNAUTHORIZED',
      code: -32001,
    });
    const raw = await rawConnect(daemon.socketPath);
    raw.send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: 1, token: 'nope', client: { name: 'x' } },
    });
    await raw.closed;
    expect(raw.messages[0]?.error).toMatchObject({ code: -32001, data: { code: 'UNAUTHORIZED' } });
  });

  it('answers a method before initialize with UNAUTHORIZED and closes the connection', async () => {
    const daemon = await startDaemon();
    for (const method of ['shell/run', 'no/such-method']) {
      const raw = await rawConnect(daemon.socketPath);
      raw.send({ jsonrpc: '2.0', id: 7, method, params: { sessionId: 's', command: 'touch /tmp/never' } });
      await raw.closed;
      expect(raw.messages).toEqual([
        expect.objectContaining({
          id: 7,
          error: expect.objectContaining({ code: -32001, data: { code: 'UNAUTHORIZED' } }) as unknown,
        }),
      ]);
    }
  });

  it('serves two connections with two sessions, each with its own cwd, at once', async () => {
    const daemon = await startDaemon();
    const dirA = join(daemon.dir, 'a');
    const dirB = join(daemon.dir, 'b');
    mkdirSync(dirA);
    mkdirSync(dirB);
    const a = await daemon.session('agent-a', dirA);
    const b = await daemon.session('agent-b', dirB);
    const [ra, rb] = await Promise.all([
      a.run({ sessionId: 'agent-a', command: 'sleep 0.2; pwd; echo $DSH_SESSION_ID' }),
      b.run({ sessionId: 'agent-b', command: 'sleep 0.2; pwd; echo $DSH_SESSION_ID' }),
    ]);
    expect(ra.stdout.text).toBe(`${dirA}\nagent-a\n`);
    expect(rb.stdout.text).toBe(`${dirB}\nagent-b\n`);
    // A session belongs to the connections that opened it.
    await expect(a.run({ sessionId: 'agent-b', command: 'true' })).rejects.toMatchObject({
      errorName: 'SESSION_NOT_FOUND',
    });
  });

  it('reattaches: a second connection opening an existing session gets reattached true', async () => {
    const daemon = await startDaemon();
    const first = await daemon.connect();
    expect(await first.call(SessionOpen, { sessionId: 's1', cwd: daemon.dir })).toMatchObject({ reattached: false });
    first.close();
    const second = await daemon.connect();
    expect(await second.call(SessionOpen, { sessionId: 's1', cwd: daemon.dir })).toMatchObject({
      reattached: true,
      jobs: [],
    });
  });

  it('kills the process tree of a run whose client was killed mid-run', async () => {
    const daemon = await startDaemon();
    const cli = spawn(process.execPath, [CLI, 'run', '--', 'echo $$; sleep 30 & echo $!; wait'], {
      env: { ...process.env, EXECD_SOCKET: daemon.socketPath, EXECD_STATE_DIR: daemon.stateDir },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let output = '';
    cli.stdout.setEncoding('utf8').on('data', (text: string) => (output += text));
    await waitFor(() => pidsIn(output).length === 2, 'the run to print its pids');
    const pids = pidsIn(output);
    cli.kill('SIGKILL');
    expect(await waitPidsGone(pids)).toEqual([]);
    const client = await daemon.session('after');
    expect((await client.run({ sessionId: 'after', command: 'echo alive' })).stdout.text).toBe('alive\n');
  });

  it('closes only the connection that sends a malformed frame; others keep working', async () => {
    const daemon = await startDaemon();
    const good = await daemon.session('good');
    const slow = good.run({ sessionId: 'good', command: 'sleep 0.3; echo survived' });
    for (const garbage of [
      'Content-Length: 9\r\n\r\n{not json',
      'Content-Length: abc\r\n\r\n{}',
      'garbage without headers\r\n\r\n',
    ]) {
      const raw = await rawConnect(daemon.socketPath);
      raw.sendBytes(garbage);
      await raw.closed;
    }
    expect((await slow).stdout.text).toBe('survived\n');
    expect((await good.run({ sessionId: 'good', command: 'echo next' })).stdout.text).toBe('next\n');
  });
});
