/**
 * Resource limits on this machine's real cgroups (SPEC §17): a run over its memory limit is killed
 * and told so, a session total holds across jobs, a CPU limit throttles a busy loop, a pids limit
 * stops a fork bomb, and a limit above `maxLimits` is refused. Needs root (the daemon writes the
 * cgroup hierarchies below its own), as the machine and `.ci/run` run the suite.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  DaemonStatus,
  JobWait,
  SessionOpen,
  SessionUpdate,
  ShellStart,
  TerminalOpen,
  TerminalRun,
} from '../../protocol/methods.js';
import { renderResult } from '../../shared/render.js';
import { startDaemon } from '../helpers/daemon.js';
import { pidAlive } from '../helpers/procs.js';
import { rejection } from '../helpers/rejection.js';

const MiB = 1024 * 1024;
/** Allocates and touches `mib` MiB, then holds it for `holdS` seconds. */
const allocate = (mib: number, holdS = 0) =>
  `/usr/bin/python3 -c 'import time; x = bytearray(${mib} << 20); time.sleep(${holdS}); print("survived")'`;

/** Pids whose command line names `word` (the test's own processes never do). */
function processesNaming(word: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(word)) pids.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

describe('resource limits on a real cgroup', () => {
  it('capabilities name the cgroup setup and every limit enforced', async () => {
    const daemon = await startDaemon();
    const client = await daemon.connect();
    const limits = client.info.capabilities.limits;
    console.log(`limits capability: ${JSON.stringify(limits)}`);
    expect(['cgroup2', 'cgroup1']).toContain(limits.backend);
    expect(limits.enforces).toEqual(['memoryBytes', 'cpus', 'pids', 'sessionMemoryBytes']);
    expect((await client.call(DaemonStatus, {})).limits).toEqual(limits);
  });

  it('a run over its memory limit is killed and told so; the daemon and the other commands are unharmed', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    // Another command of the same session, running all along.
    const neighbour = await client.call(ShellStart, { sessionId: 's1', command: 'sleep 2; echo neighbour-ok' });
    const result = await client.run({ sessionId: 's1', command: allocate(200), limits: { memoryBytes: 64 * MiB } });
    expect(result).toMatchObject({ oomKilled: true, oomLimitBytes: 64 * MiB, signal: 'SIGKILL' });
    expect(result.stdout.text).not.toContain('survived');
    const text = renderResult(result);
    expect(text.endsWith('\n[killed: out of memory (limit 64 MiB)]\n[killed by signal: SIGKILL]')).toBe(true);

    expect(pidAlive(daemon.pid)).toBe(true);
    const job = await client.call(JobWait, { sessionId: 's1', jobId: neighbour.jobId, timeoutMs: 10_000 });
    expect(job).toMatchObject({ status: 'completed', exitCode: 0 });
    expect(job.oomKilled).toBeUndefined();
    // The same allocation under a limit it fits in, and a run without limits, are untouched.
    const fits = await client.run({ sessionId: 's1', command: allocate(20), limits: { memoryBytes: 128 * MiB } });
    expect(fits).toMatchObject({ exitCode: 0, signal: null });
    expect(fits.stdout.text).toBe('survived\n');
    expect(fits.oomKilled).toBeUndefined();
    expect(renderResult(fits)).toBe('survived\n');
    const free = await client.run({ sessionId: 's1', command: 'echo free' });
    expect(free).toMatchObject({ exitCode: 0 });
    expect(free.oomKilled).toBeUndefined();
  });

  it('a session total holds across two concurrent jobs, and status shows its memory', async () => {
    const daemon = await startDaemon();
    const client = await daemon.connect();
    await client.call(SessionOpen, { sessionId: 's1', cwd: daemon.dir, limits: { sessionMemoryBytes: 160 * MiB } });
    // Each fits alone (100 MiB < 160 MiB), both together do not.
    const jobs = [];
    for (let i = 0; i < 2; i++) {
      jobs.push(await client.call(ShellStart, { sessionId: 's1', command: allocate(100, 4) }));
    }
    const settled = await Promise.all(
      jobs.map((job) => client.call(JobWait, { sessionId: 's1', jobId: job.jobId, timeoutMs: 20_000 })),
    );
    const status = await client.call(DaemonStatus, {});
    const session = status.sessions.find((entry) => entry.sessionId === 's1')!;
    const peakSeen = session.usage?.memoryPeakBytes ?? 0;
    console.log(
      `jobs: ${settled.map((job) => `${job.status} ${job.signal ?? job.exitCode} oomKilled=${job.oomKilled ?? false}`).join('; ')}; session peak ${(peakSeen / MiB).toFixed(1)} MiB, cpu ${session.usage?.cpuMicros} µs`,
    );
    const killed = settled.filter((job) => job.oomKilled);
    expect(killed.length).toBeGreaterThanOrEqual(1);
    for (const job of killed) expect(job).toMatchObject({ oomLimitBytes: 160 * MiB, signal: 'SIGKILL' });
    expect(session.limits).toEqual({ sessionMemoryBytes: 160 * MiB });
    expect(session.usage).toBeDefined();
    expect(peakSeen).toBeGreaterThan(90 * MiB);
    expect(peakSeen).toBeLessThanOrEqual(160 * MiB);
    expect(pidAlive(daemon.pid)).toBe(true);
  });

  it('cpus 0.25 keeps a busy loop at 30% of one core or less, measured from the cgroup', async () => {
    const daemon = await startDaemon();
    const client = await daemon.connect();
    await client.call(SessionOpen, { sessionId: 's1', cwd: daemon.dir, limits: { cpus: 0.25 } });
    const cpuOf = async () =>
      (await client.call(DaemonStatus, {})).sessions.find((entry) => entry.sessionId === 's1')?.usage?.cpuMicros ?? 0;
    const before = await cpuOf();
    const result = await client.run({ sessionId: 's1', command: 'timeout 3 bash -c "while :; do :; done"; true' });
    const used = (await cpuOf()) - before;
    const share = used / (result.durationMs * 1000);
    console.log(
      `busy loop: ${(used / 1000).toFixed(0)} ms of CPU in ${result.durationMs} ms: ${(share * 100).toFixed(1)}% of one core`,
    );
    expect(result.durationMs).toBeGreaterThanOrEqual(2_900);
    expect(used).toBeGreaterThan(0);
    expect(share).toBeLessThanOrEqual(0.3);
  });

  it('pids 32 stops a fork bomb, and every process of it is killed after', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    // Bounded twice besides the limit under test: a process count for the user, and the run's timeout.
    const marker = `forkbomb${process.pid}`;
    const result = await client.run({
      sessionId: 's1',
      command: `ulimit -u 512; ${marker}() { ${marker} & ${marker} & wait; }; ${marker}`,
      limits: { pids: 32 },
      timeoutMs: 3_000,
    });
    expect(result.pidsLimitReached).toBe(32);
    expect(result.timedOut).toBe(true);
    const text = renderResult(result);
    expect(text).toContain('\n[limit: process count 32 reached]\n');
    expect(text.endsWith('[killed by signal: SIGTERM]') || text.endsWith('[killed by signal: SIGKILL]')).toBe(true);
    expect(processesNaming(marker)).toEqual([]);
    expect(pidAlive(daemon.pid)).toBe(true);
    // The daemon still runs the session's next command.
    expect(await client.run({ sessionId: 's1', command: 'echo after' })).toMatchObject({ exitCode: 0 });
  });

  it('a terminal: a process killed inside it is reported on the next answer; the shell lives on', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const { terminal } = await client.call(TerminalOpen, { sessionId: 's1', limits: { memoryBytes: 64 * MiB } });
    const run = (command: string) => client.call(TerminalRun, { sessionId: 's1', terminalId: terminal.id, command });
    const killed = await run(allocate(200));
    expect(killed).toMatchObject({ state: 'completed', exitCode: 137, oomKilled: true, oomLimitBytes: 64 * MiB });
    const next = await run('echo still-here');
    expect(next).toMatchObject({ state: 'completed', exitCode: 0 });
    expect(next.output).toContain('still-here');
    expect(next.oomKilled).toBeUndefined();
    // A second kill is news again.
    expect(await run(allocate(200))).toMatchObject({ oomKilled: true });
  });

  it('a limit above maxLimits is refused naming it; a request or an update may only lower', async () => {
    const daemon = await startDaemon({ config: { maxLimits: { memoryBytes: 256 * MiB, pids: 100 } } });
    const client = await daemon.connect();
    const open = await rejection(
      client.call(SessionOpen, { sessionId: 's1', cwd: daemon.dir, limits: { memoryBytes: 512 * MiB } }),
    );
    expect(open.errorName).toBe('LIMIT_EXCEEDED');
    expect(open.message).toContain(`limits.memoryBytes ${512 * MiB} is above maxLimits.memoryBytes (${256 * MiB})`);
    await client.call(SessionOpen, { sessionId: 's1', cwd: daemon.dir, limits: { memoryBytes: 128 * MiB } });
    const run = await rejection(client.run({ sessionId: 's1', command: 'true', limits: { pids: 1000 } }));
    expect(run.errorName).toBe('LIMIT_EXCEEDED');
    expect(run.message).toContain('limits.pids 1000 is above maxLimits.pids (100)');
    const above = await rejection(client.run({ sessionId: 's1', command: 'true', limits: { memoryBytes: 200 * MiB } }));
    expect(above.errorName).toBe('LIMIT_EXCEEDED');
    expect(above.message).toContain("limits.memoryBytes 209715200 is above the session's (134217728)");
    const raise = await rejection(client.call(SessionUpdate, { sessionId: 's1', limits: { memoryBytes: 200 * MiB } }));
    expect(raise.errorName).toBe('FORBIDDEN');
    expect(raise.message).toContain('limits.memoryBytes may only be lowered (has 134217728, asked 209715200)');
    const lowered = await client.call(SessionUpdate, { sessionId: 's1', limits: { memoryBytes: 64 * MiB, pids: 50 } });
    expect(lowered.limits).toEqual({ memoryBytes: 64 * MiB, pids: 50 });
    // The lowered limit applies to the next command.
    const killed = await client.run({ sessionId: 's1', command: allocate(100) });
    expect(killed).toMatchObject({ oomKilled: true, oomLimitBytes: 64 * MiB });
  });
});
