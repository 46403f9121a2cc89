/**
 * `GET /metrics` of a real daemon (`serve --metrics`, SPEC §18) around a known workload: the exact
 * counts it adds, and a label set that does not grow with sessions (no session id, path or command
 * in any label).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FsRead, FsWrite } from '../../protocol/fs.js';
import { JobWait, SessionOpen, ShellRun, ShellStart, TerminalOpen, TerminalRun } from '../../protocol/methods.js';
import { growth, scrape, startObservedDaemon } from './helpers.js';

const UNCONFINED = 'mode="danger-full-access"';

describe('observability metrics', { timeout: 180_000 }, () => {
  it('counts 3 runs, 1 timeout, 1 denial, 1 job and 1 terminal run exactly', async () => {
    const { daemon, base } = await startObservedDaemon();
    const workspace = join(daemon.dir, 'ws');
    mkdirSync(workspace);
    writeFileSync(join(workspace, 'five.txt'), 'hello');
    const client = await daemon.connect();
    await client.call(SessionOpen, { sessionId: 'metrics-free-session', cwd: workspace });
    await client.call(SessionOpen, { sessionId: 'metrics-ro-session', cwd: workspace, sandbox: { mode: 'read-only' } });
    // Everything the first request loads is counted before the baseline.
    await client.call(ShellRun, { sessionId: 'metrics-free-session', command: 'true' });
    const before = await scrape(base);

    for (const n of [1, 2, 3])
      expect(
        await client.call(ShellRun, { sessionId: 'metrics-free-session', command: `echo run-${n}` }),
      ).toMatchObject({ exitCode: 0 });
    expect(
      await client.call(ShellRun, { sessionId: 'metrics-free-session', command: 'sleep 30', timeoutMs: 300 }),
    ).toMatchObject({ timedOut: true });
    const denied = await client.call(ShellRun, { sessionId: 'metrics-ro-session', command: 'touch denied.txt' });
    expect(denied.sandbox?.denied).toBe(true);
    const { jobId } = await client.call(ShellStart, { sessionId: 'metrics-free-session', command: 'echo job' });
    expect(await client.call(JobWait, { sessionId: 'metrics-free-session', jobId })).toMatchObject({
      status: 'completed',
    });
    const { terminal } = await client.call(TerminalOpen, { sessionId: 'metrics-free-session' });
    expect(
      await client.call(TerminalRun, {
        sessionId: 'metrics-free-session',
        terminalId: terminal.id,
        command: 'echo term',
      }),
    ).toMatchObject({ state: 'completed', exitCode: 0 });
    await client.call(FsWrite, {
      sessionId: 'metrics-free-session',
      path: 'seven.txt',
      data: Buffer.from('7 bytes').toString('base64'),
    });
    expect(await client.call(FsRead, { sessionId: 'metrics-free-session', path: 'five.txt' })).toMatchObject({
      bytes: 5,
    });
    const after = await scrape(base);

    expect(
      growth(before.samples, after.samples, [
        `execd_commands_total{kind="run",${UNCONFINED},result="ok"}`,
        `execd_commands_total{kind="run",${UNCONFINED},result="timeout"}`,
        `execd_commands_total{kind="run",mode="read-only",result="denied"}`,
        `execd_commands_total{kind="job",${UNCONFINED},result="ok"}`,
        `execd_commands_total{kind="terminal_run",${UNCONFINED},result="ok"}`,
        `execd_command_duration_seconds_count{kind="run",${UNCONFINED}}`,
        `execd_spawn_duration_seconds_count{kind="run"}`,
        `execd_spawn_duration_seconds_count{kind="job"}`,
        'execd_sandbox_denials_total{mode="read-only"}',
        'execd_requests_total{method="shell/run",code="ok"}',
        'execd_requests_total{method="shell/start",code="ok"}',
        'execd_requests_total{method="terminal/run",code="ok"}',
        'execd_fs_bytes_total{direction="write"}',
        'execd_fs_bytes_total{direction="read"}',
      ]),
    ).toEqual({
      [`execd_commands_total{kind="run",${UNCONFINED},result="ok"}`]: 3,
      [`execd_commands_total{kind="run",${UNCONFINED},result="timeout"}`]: 1,
      [`execd_commands_total{kind="run",mode="read-only",result="denied"}`]: 1,
      [`execd_commands_total{kind="job",${UNCONFINED},result="ok"}`]: 1,
      [`execd_commands_total{kind="terminal_run",${UNCONFINED},result="ok"}`]: 1,
      [`execd_command_duration_seconds_count{kind="run",${UNCONFINED}}`]: 4,
      [`execd_spawn_duration_seconds_count{kind="run"}`]: 5,
      [`execd_spawn_duration_seconds_count{kind="job"}`]: 1,
      'execd_sandbox_denials_total{mode="read-only"}': 1,
      'execd_requests_total{method="shell/run",code="ok"}': 5,
      'execd_requests_total{method="shell/start",code="ok"}': 1,
      'execd_requests_total{method="terminal/run",code="ok"}': 1,
      'execd_fs_bytes_total{direction="write"}': 7,
      'execd_fs_bytes_total{direction="read"}': 5,
    });
    // Nothing else was counted as a command.
    const commandSeries = (samples: Map<string, number>) =>
      [...samples].filter(([key]) => key.startsWith('execd_commands_total')).reduce((sum, [, n]) => sum + n, 0);
    expect(commandSeries(after.samples) - commandSeries(before.samples)).toBe(7);
    expect(after.samples.get('execd_sessions')).toBe(2);
    expect(after.samples.get('execd_jobs_running')).toBe(0);
    expect(after.samples.get('execd_terminals_open')).toBe(1);
    expect(after.samples.get('execd_connections{transport="unix"}')).toBe(1);
    expect(after.samples.get('execd_helper_processes{helper="spawner"}')).toBeGreaterThanOrEqual(0);
    expect(after.samples.has('execd_spill_bytes')).toBe(true);
    // Node's default process metrics are there too.
    expect(after.samples.has('process_resident_memory_bytes')).toBe(true);
    expect([...after.samples.keys()].some((key) => key.startsWith('nodejs_eventloop_lag_seconds'))).toBe(true);
    // No label names a session, a path or a command.
    for (const secret of ['metrics-free-session', 'metrics-ro-session', 'run-1', 'denied.txt', workspace])
      expect(after.text).not.toContain(secret);
  });

  it('counts the bytes of transfer streams too (uploads and downloads)', async () => {
    const { daemon, base } = await startObservedDaemon();
    const client = await daemon.session('streams');
    const local = join(daemon.dir, 'local.bin');
    writeFileSync(local, Buffer.alloc(300_000, 7));
    const before = await scrape(base);
    await client.fs.upload(local, 'remote.bin', { sessionId: 'streams' });
    await client.fs.download(join(daemon.dir, 'back.bin'), 'remote.bin', { sessionId: 'streams' });
    const after = await scrape(base);
    expect(
      growth(before.samples, after.samples, [
        'execd_fs_bytes_total{direction="write"}',
        'execd_fs_bytes_total{direction="read"}',
      ]),
    ).toEqual({
      'execd_fs_bytes_total{direction="write"}': 300_000,
      'execd_fs_bytes_total{direction="read"}': 300_000,
    });
  });

  it('keeps the same series whatever the number of sessions: 1,000 sessions add none', async () => {
    const { daemon, base } = await startObservedDaemon({ config: { maxSessions: 1_100 } });
    const client = await daemon.connect();
    const runIn = async (sessionId: string) => {
      await client.call(SessionOpen, { sessionId, cwd: daemon.dir });
      await client.call(ShellRun, { sessionId, command: 'true' });
    };
    await runIn('cardinality-0');
    const series = (samples: Map<string, number>) => [...samples.keys()].filter((key) => key.startsWith('execd_'));
    const first = await scrape(base);
    for (let batch = 1; batch < 1_000; batch += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, 1_000 - batch) }, (_, i) => runIn(`cardinality-${batch + i}`)),
      );
    }
    const after = await scrape(base);
    expect(after.samples.get('execd_sessions')).toBe(1_000);
    expect(after.samples.get(`execd_commands_total{kind="run",${UNCONFINED},result="ok"}`)).toBe(1_000);
    expect(series(after.samples)).toEqual(series(first.samples));
    expect(after.text).not.toContain('cardinality-');
  });
});
