/** Requests become specs once (SPEC §1.2); bad params are refused by name; config applies live. */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigGet, ConfigSet, SessionOpen, ShellResolve, ShellRun } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { rejection } from '../helpers/rejection.js';

describe('resolve and validation', () => {
  it.each([
    ['0', 0],
    ['-1', -1],
    ['NaN (null on the wire)', Number.NaN],
    ['a string', 'abc'],
  ])('refuses timeoutMs %s with InvalidParams naming the field', async (_label, value) => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const error = await rejection(
      client.call(ShellRun, { sessionId: 's1', command: 'true', timeoutMs: value as number }),
    );
    expect(error.code).toBe(-32602);
    expect(error.errorName).toBe('INVALID_PARAMS');
    expect(error.message).toBe('timeoutMs must be a positive finite number');
  });

  it('caps a huge timeout at maxTimeoutMs and fills every default', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const capped = await client.call(ShellResolve, { sessionId: 's1', command: 'true', timeoutMs: 1e12 });
    expect(capped.timeoutMs).toBe(600_000);
    const defaulted = await client.call(ShellResolve, { sessionId: 's1', command: 'echo hi' });
    expect(defaulted).toMatchObject({
      command: 'echo hi',
      argv: ['bash', '-c', 'echo hi'],
      workdir: daemon.dir,
      timeoutMs: 120_000,
      stdoutMaxBytes: 64_000,
      sandboxPolicy: { mode: 'danger-full-access' },
    });
  });

  it('refuses an empty command and unknown fields, naming them', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    expect((await rejection(client.call(ShellRun, { sessionId: 's1', command: '' }))).message).toBe(
      'command must be a non-empty string',
    );
    const unknown = await rejection(client.call(ShellRun, { sessionId: 's1', command: 'true', bogus: 1 } as never));
    expect(unknown.code).toBe(-32602);
    expect(unknown.message).toContain('bogus');
  });

  it('resolves a relative workdir against the session cwd and runs there', async () => {
    const daemon = await startDaemon();
    mkdirSync(join(daemon.dir, 'sub', 'dir'), { recursive: true });
    const client = await daemon.session('s1', join(daemon.dir, 'sub'));
    const result = await client.run({ sessionId: 's1', command: 'pwd', workdir: 'dir' });
    expect(result.stdout.text).toBe(`${join(daemon.dir, 'sub', 'dir')}\n`);
  });

  it('answers a missing workdir with SPAWN_FAILED naming the path', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const missing = join(daemon.dir, 'no-such-dir');
    const error = await rejection(client.run({ sessionId: 's1', command: 'true', workdir: missing }));
    expect(error.errorName).toBe('SPAWN_FAILED');
    expect(error.code).toBe(-32007);
    expect(error.message).toBe(`workdir does not exist: ${missing}`);
  });

  it('refuses a session that this connection has not opened', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const error = await rejection(client.run({ sessionId: 'other', command: 'true' }));
    expect(error.errorName).toBe('SESSION_NOT_FOUND');
  });
});

describe('configuration at run time', () => {
  it('refuses a bad value naming the field, and changes nothing', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const before = await client.call(ConfigGet, {});
    for (const [patch, message] of [
      [{ graceMs: 0 }, 'patch.graceMs must be a positive finite number'],
      [{ graceMs: 2_147_483_648 }, 'patch.graceMs must be at most 2147483647'],
      [{ timeoutMs: -5, maxOutputBytes: 10 }, 'patch.timeoutMs must be a positive finite number'],
      [
        { defaultSandboxMode: 'open' },
        'patch.defaultSandboxMode must be one of read-only, workspace-write, danger-full-access',
      ],
    ] as const) {
      const error = await rejection(client.call(ConfigSet, { patch: patch as never }));
      expect(error.errorName).toBe('INVALID_PARAMS');
      expect(error.message).toBe(message);
    }
    expect(await client.call(ConfigGet, {})).toEqual(before);
  });

  it('applies a good value to the next session opened, without a restart', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s0');
    const next = await client.call(ConfigSet, { patch: { timeoutMs: 250, maxOutputBytes: 4 } });
    expect(next.timeoutMs).toBe(250);
    await client.call(SessionOpen, { sessionId: 's1', cwd: daemon.dir });
    const result = await client.run({ sessionId: 's1', command: 'echo 123456; sleep 30' });
    expect(result.timedOut).toBe(true);
    expect(result.timeoutMs).toBe(250);
    expect(result.stdout).toMatchObject({ text: '456\n', truncated: true });
  });

  it('persists a change to config.json when asked, and a new daemon reads it', async () => {
    const first = await startDaemon();
    const client = await first.session('s1');
    await client.call(ConfigSet, { patch: { timeoutMs: 4321 }, persist: true });
    await first.stop();
    const second = await startDaemon({ stateDir: first.stateDir });
    const again = await second.session('s1');
    expect((await again.call(ConfigGet, {})).timeoutMs).toBe(4321);
  });

  it('unsets cwd with null, also in config.json; null is refused for a field that must be set', async () => {
    const first = await startDaemon();
    const client = await first.session('s1');
    await client.call(ConfigSet, { patch: { cwd: first.dir, timeoutMs: 4321 }, persist: true });
    const unset = await client.call(ConfigSet, { patch: { cwd: null }, persist: true });
    expect(unset).not.toHaveProperty('cwd');
    expect(JSON.parse(readFileSync(join(first.stateDir, 'config.json'), 'utf8'))).toEqual({ timeoutMs: 4321 });
    const error = await rejection(client.call(ConfigSet, { patch: { timeoutMs: null } as never }));
    expect(error.errorName).toBe('INVALID_PARAMS');
    expect(error.message).toContain('timeoutMs');
    await first.stop();
    const second = await startDaemon({ stateDir: first.stateDir });
    const config = await (await second.session('s1')).call(ConfigGet, {});
    expect(config).not.toHaveProperty('cwd');
    expect(config.timeoutMs).toBe(4321);
  });
});
