/**
 * The administrative right (issue 27.16): a session's connection cannot change the daemon for
 * the others — clean their jobs, widen them through config/set, see their ids, stop the daemon —
 * and a session's sandbox and limits are the ones it was opened with.
 */
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ConfigSet,
  DaemonShutdown,
  DaemonStatus,
  JobClean,
  JobList,
  JobWait,
  SessionOpen,
  ShellStart,
  TerminalList,
} from '../../protocol/methods.js';
import { rejection } from '../helpers/rejection.js';
import { startDaemon } from '../helpers/daemon.js';

describe('the administrative right', { timeout: 120_000 }, () => {
  it('session B cannot clean A’s jobs, widen A through config/set, see A’s id or stop the daemon', async () => {
    const daemon = await startDaemon();
    const workspace = join(daemon.dir, 'ws');
    mkdirSync(workspace);
    const a = await daemon.connect({ admin: false });
    const b = await daemon.connect({ admin: false });
    expect(a.info.admin).toBe(false);
    await a.call(SessionOpen, { sessionId: 'agent-A', cwd: workspace, sandbox: { mode: 'workspace-write' } });
    await b.call(SessionOpen, { sessionId: 'agent-B', cwd: daemon.dir });
    const { jobId } = await a.call(ShellStart, { sessionId: 'agent-A', command: 'echo done' });
    await a.call(JobWait, { sessionId: 'agent-A', jobId });

    const clean = await rejection(b.call(JobClean, { all: true }));
    console.log(clean.message);
    expect(clean.errorName).toBe('FORBIDDEN');
    expect(clean.message).toContain('job/clean { all } needs the administrative right');
    expect((await a.call(JobList, { sessionId: 'agent-A' })).map((job) => job.id)).toEqual([jobId]);

    const widen = await rejection(
      b.call(ConfigSet, { patch: { defaultSandboxMode: 'danger-full-access', maxOutputBytes: 1 } }),
    );
    expect(widen.errorName).toBe('FORBIDDEN');
    expect((await rejection(b.call(JobList, { all: true }))).errorName).toBe('FORBIDDEN');
    expect((await rejection(b.call(TerminalList, { all: true }))).errorName).toBe('FORBIDDEN');
    expect((await rejection(b.call(DaemonShutdown, {}))).errorName).toBe('FORBIDDEN');

    const seen = await b.call(DaemonStatus, {});
    expect(seen.sessions.map((session) => session.sessionId)).toEqual(['agent-B']);
    expect(JSON.stringify(seen)).not.toContain('agent-A');

    const admin = await daemon.connect({ admin: true });
    expect(admin.info.admin).toBe(true);
    const all = (await admin.call(DaemonStatus, {})).sessions.map((session) => session.sessionId).sort();
    expect(all).toEqual(['agent-A', 'agent-B']);
  });

  it('a session keeps its defaults and limits when the admin widens them, and is narrowed at once', async () => {
    const daemon = await startDaemon({ config: { defaultSandboxMode: 'read-only', maxOutputBytes: 4 } });
    const workspace = join(daemon.dir, 'ws');
    mkdirSync(workspace);
    const a = await daemon.connect({ admin: false });
    await a.call(SessionOpen, { sessionId: 'agent-A', cwd: workspace });
    const admin = await daemon.connect({ admin: true });
    await admin.call(ConfigSet, { patch: { defaultSandboxMode: 'danger-full-access', maxOutputBytes: 64_000 } });
    const run = await a.run({ sessionId: 'agent-A', command: 'echo 123456; touch /etc/execd-escaped' });
    expect(run).toMatchObject({ timedOut: false, stdout: { text: '456\n', truncated: true } });
    expect(run.sandbox).toMatchObject({ mode: 'read-only', denied: true });
    expect(existsSync('/etc/execd-escaped')).toBe(false);
    // A lowered limit reaches the open session at once.
    await admin.call(ConfigSet, { patch: { timeoutMs: 100 } });
    const narrowed = await a.run({ sessionId: 'agent-A', command: 'sleep 5; echo late' });
    expect(narrowed).toMatchObject({ timedOut: true, timeoutMs: 100 });
    // A session opened afterwards gets the new defaults and limits.
    await a.call(SessionOpen, { sessionId: 'agent-C', cwd: workspace });
    const later = await a.run({ sessionId: 'agent-C', command: 'echo 123456' });
    expect(later.sandbox?.mode).toBe('danger-full-access');
    expect(later.stdout).toMatchObject({ text: '123456\n', truncated: false });
  });

  it('the admin token lives 0600 in the state dir; a wrong one is UNAUTHORIZED', async () => {
    const daemon = await startDaemon();
    const path = join(daemon.stateDir, 'admin-token');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, 'utf8').trim()).toMatch(/^[0-9a-f]{64}$/);
    expect(readFileSync(path, 'utf8')).not.toBe(readFileSync(join(daemon.stateDir, 'token'), 'utf8'));
    const wrong = await rejection(daemon.connect({ admin: true, adminToken: 'f'.repeat(64) }));
    expect(wrong.errorName).toBe('UNAUTHORIZED');
  });
});
