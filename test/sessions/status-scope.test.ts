/**
 * `daemon/status` of a connection without the administrative right shows no daemon-wide counters:
 * its jobs, terminals, processes and spill are those of the sessions it opened, and the daemon's
 * spawn counts and memory are the admin's alone.
 */
import { describe, expect, it } from 'vitest';
import { DaemonStatus, SessionOpen, ShellStart } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';

describe('daemon/status for a session', { timeout: 60_000 }, () => {
  it('another session’s jobs, processes and output do not show in a non-admin status', async () => {
    const daemon = await startDaemon();
    const a = await daemon.connect({ admin: false });
    await a.call(SessionOpen, { sessionId: 'agent-A', cwd: daemon.dir });
    await a.call(ShellStart, { sessionId: 'agent-A', command: 'seq 1 20000; sleep 300' });
    const b = await daemon.connect({ admin: false });
    await b.call(SessionOpen, { sessionId: 'agent-B', cwd: daemon.dir });
    const admin = await daemon.connect({ admin: true });
    await waitFor(async () => (await admin.call(DaemonStatus, {})).spill.bytes > 0, 'the job to write its log');

    const seen = await b.call(DaemonStatus, {});
    expect(seen).toMatchObject({
      jobs: { running: 0, settled: 0 },
      terminals: { running: 0, exited: 0 },
      processes: 0,
      spawns: { inline: 0, spawner: 0 },
      memory: [],
      spill: { files: 0, bytes: 0 },
    });
    const own = await a.call(DaemonStatus, {});
    expect(own).toMatchObject({ jobs: { running: 1 }, processes: 1 });
    expect(own.spill.bytes).toBeGreaterThan(0);
    const all = await admin.call(DaemonStatus, {});
    expect(all.jobs.running).toBe(1);
    expect(all.memory.length).toBeGreaterThan(0);
    expect(all.spawns.inline + all.spawns.spawner).toBeGreaterThan(0);
  });
});
