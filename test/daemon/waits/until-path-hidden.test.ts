/**
 * `until.path` of `job/wait` is resolved like a file-API path (SPEC §13–14): its real path, then
 * the hidden-places check. Named through `/proc/self/root`, a symlink or `..`, the token, the admin
 * token and another session's spill directory never count as existing, so a wait is no existence
 * test of them; an ordinary path, also through a symlink, still ends the wait.
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { JobWait, ShellStart } from '../../../protocol/methods.js';
import { startDaemon } from '../../helpers/daemon.js';

describe('job/wait until.path and the hidden places', { timeout: 60_000 }, () => {
  it('the token, the admin token and another session’s spill never exist for a wait; ordinary paths do', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('w');
    await daemon.session('other-secret-session');
    const { jobId } = await client.call(ShellStart, { sessionId: 'w', command: 'sleep 60' });
    const links = join(daemon.dir, 'links');
    mkdirSync(links);
    symlinkSync(daemon.stateDir, join(links, 'state'));
    symlinkSync(join(daemon.stateDir, 'spill'), join(links, 'spill'));
    const probes = [
      `/proc/self/root${daemon.stateDir}/token`,
      `/proc/self/root${daemon.stateDir}/admin-token`,
      `/proc/${daemon.pid}/root${daemon.stateDir}/token`,
      join(links, 'state', 'token'),
      join(links, 'spill', 'other-secret-session'),
      `${links}/../links/state/admin-token`,
    ];
    const wait = (path: string) =>
      client.call(JobWait, { sessionId: 'w', jobId, until: { path }, timeoutMs: 300 }).then((job) => job.endedBy);
    for (const path of probes) expect(await wait(path), path).toBe('timeout');
    // The same wait on an ordinary file, named directly and through a symlink, ends on it.
    writeFileSync(join(daemon.dir, 'ready'), '');
    symlinkSync(join(daemon.dir, 'ready'), join(links, 'ready'));
    expect(await wait(join(daemon.dir, 'ready'))).toBe('path');
    expect(await wait(join(links, 'ready'))).toBe('path');
  });
});
