/**
 * Issue 14, point 12: sessions expire. A session that no connection holds, that runs nothing and
 * has been quiet for `sessionIdleCloseMs` is closed like `session/close` (files deleted), so
 * abandoned session ids never fill `maxSessions`; reopening it later makes a new session.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExecdRpcError } from '../../client/connection.js';
import { DaemonStatus, SessionOpen, ShellStart } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { waitJob } from '../helpers/jobs.js';
import { waitFor } from '../helpers/wait.js';

describe('idle sessions', () => {
  it('are closed after sessionIdleCloseMs with their files; held or busy ones stay; maxSessions frees up', async () => {
    const daemon = await startDaemon({ config: { sessionIdleCloseMs: 1_000, maxSessions: 4, maxOutputBytes: 100 } });
    const observer = await daemon.connect();
    const sessionIds = async () => (await observer.call(DaemonStatus, {})).sessions.map((s) => s.sessionId).sort();

    await daemon.session('held');
    const busyClient = await daemon.session('busy');
    await busyClient.call(ShellStart, { sessionId: 'busy', command: 'sleep 300' });
    busyClient.close();

    const idleClient = await daemon.session('idle-1');
    const spilled = await idleClient.run({ sessionId: 'idle-1', command: 'seq 1 1000' });
    expect(spilled.stdout.spillPath).toBeDefined();
    const { jobId } = await idleClient.call(ShellStart, { sessionId: 'idle-1', command: 'echo job' });
    await waitJob(idleClient, 'idle-1', jobId);
    const spillDir = join(daemon.stateDir, 'spill', 'idle-1');
    expect(readdirSync(spillDir).length).toBeGreaterThan(0);
    (await daemon.session('idle-2')).close();
    idleClient.close();
    const left = Date.now();

    // Four session ids were opened: a fifth is refused while the abandoned ones still count.
    const refused = await observer
      .call(SessionOpen, { sessionId: 'fresh', cwd: daemon.dir })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ExecdRpcError);
    expect((refused as ExecdRpcError).message).toBe('maxSessions limit reached (4)');

    // A session leaves the status as its close begins; its files go once its processes are gone.
    await waitFor(
      async () => JSON.stringify(await sessionIds()) === JSON.stringify(['busy', 'held']) && !existsSync(spillDir),
      'the idle sessions to be closed with their files',
    );
    const closedAfter = Date.now() - left;
    expect(existsSync(spillDir)).toBe(false);
    expect(existsSync(spilled.stdout.spillPath!)).toBe(false);
    expect(daemon.stderr()).toContain('closing an idle session');

    const fresh = await observer.call(SessionOpen, { sessionId: 'fresh', cwd: daemon.dir });
    expect(fresh.reattached).toBe(false);
    const reopened = await observer.call(SessionOpen, { sessionId: 'idle-1', cwd: daemon.dir });
    expect(reopened).toEqual({ sessionId: 'idle-1', reattached: false, jobs: [] });
    expect((await observer.run({ sessionId: 'idle-1', command: 'echo again' })).stdout.text).toBe('again\n');
    // The held session and the one with a running job were kept.
    expect((await observer.call(DaemonStatus, {})).sessions.find((s) => s.sessionId === 'busy')?.runningJobs).toBe(1);
    expect(closedAfter).toBeGreaterThanOrEqual(900);
    console.log(
      `idle sessions: closed ${closedAfter} ms after their last connection left (sessionIdleCloseMs=1000), files deleted; ` +
        `the held session and the one with a running job stayed; maxSessions=4 refused a 5th before, served it after`,
    );
  });
});
