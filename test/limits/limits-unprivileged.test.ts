/**
 * Resource limits in the unprivileged condition of a container (SPEC §15, §17): the daemon runs as
 * uid 1000 without capabilities in a user namespace (test/helpers/unprivileged.sh), where no cgroup
 * can be written. The capabilities say no limit is enforced, and a request for one is refused
 * (never silently unlimited) unless the daemon was started with `limitsOptional`. Needs root (to
 * write the namespace's uid/gid maps).
 */
import { chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { DaemonStatus, SessionOpen } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { rejection } from '../helpers/rejection.js';

const UNPRIVILEGED = join(import.meta.dirname, '..', 'helpers', 'unprivileged.sh');
const UID = 1000;
const MiB = 1024 * 1024;

/** A daemon in the unprivileged condition, on a temp dir of its user's. */
async function startUnprivilegedDaemon(config: Record<string, unknown> = {}) {
  if (process.getuid?.() !== 0) throw new Error('this test needs root: it writes the uid/gid maps of the namespace');
  const base = mkdtempSync(join(tmpdir(), 'execd-unpriv-limits-'));
  chownSync(base, UID, UID);
  onTestFinished(() => rmSync(base, { recursive: true, force: true }));
  const workspace = join(base, 'ws');
  mkdirSync(workspace);
  chownSync(workspace, UID, UID);
  const daemon = await startDaemon({
    launcher: ['bash', UNPRIVILEGED],
    socketPath: join(base, 'run', 'execd.sock'),
    stateDir: join(base, 'state'),
    config,
  });
  return { daemon, workspace, client: await daemon.connect() };
}

describe('resource limits in the unprivileged condition (uid 1000, no capabilities)', () => {
  it('capabilities report no limits, and a request for one is LIMIT_UNAVAILABLE naming it', async () => {
    const { client, workspace } = await startUnprivilegedDaemon();
    const limits = client.info.capabilities.limits;
    console.log(`limits capability: ${JSON.stringify(limits)}`);
    expect(limits).toMatchObject({ backend: 'none', enforces: [] });
    expect(limits.unavailable).toContain('no cgroup can be written here');
    expect((await client.call(DaemonStatus, {})).limits).toEqual(limits);

    const open = await rejection(
      client.call(SessionOpen, { sessionId: 's1', cwd: workspace, limits: { memoryBytes: 256 * MiB } }),
    );
    expect(open.errorName).toBe('LIMIT_UNAVAILABLE');
    expect(open.message).toContain('limits.memoryBytes cannot be enforced here');
    // A session without limits runs as always; a command asking for one is refused.
    await client.call(SessionOpen, { sessionId: 's1', cwd: workspace });
    const run = await rejection(client.run({ sessionId: 's1', command: 'echo never', limits: { pids: 32 } }));
    expect(run.errorName).toBe('LIMIT_UNAVAILABLE');
    expect(run.message).toContain('limits.pids cannot be enforced here');
    expect(await client.run({ sessionId: 's1', command: 'echo ok' })).toMatchObject({ exitCode: 0 });
  });

  it('with limitsOptional the limits are dropped and the commands run', async () => {
    const { client, workspace } = await startUnprivilegedDaemon({ limitsOptional: true });
    expect(client.info.capabilities.limits.enforces).toEqual([]);
    await client.call(SessionOpen, { sessionId: 's1', cwd: workspace, limits: { memoryBytes: 256 * MiB } });
    const result = await client.run({ sessionId: 's1', command: 'echo ran', limits: { cpus: 0.5 } });
    expect(result).toMatchObject({ exitCode: 0 });
    expect(result.stdout.text).toBe('ran\n');
    const status = await client.call(DaemonStatus, {});
    expect(status.sessions.find((session) => session.sessionId === 's1')?.limits).toBeUndefined();
  });
});
