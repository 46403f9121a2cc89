/**
 * Processes that escape: a command's descendant that calls `setsid` (or double-forks and is
 * re-parented to init) leaves the process group the daemon kills. Each is found by its unit's
 * cgroup (or, without one, by the marker in its environment) and dies with its session, its job's
 * kill, its run's timeout or its terminal's close; it counts against `maxProcesses`; another
 * session's processes are untouched. The first tests run in the mode the machine allows (a cgroup
 * where the test's daemon can write one, else the marker) and print it; the marker tests force it.
 */
import { chownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { ExecdClient } from '../../client/connection.js';
import {
  DaemonStatus,
  JobKill,
  SessionClose,
  ShellRun,
  ShellStart,
  TerminalClose,
  TerminalOpen,
  TerminalRun,
} from '../../protocol/methods.js';
import { ProcessScopes } from '../../daemon/processes/process-scopes.js';
import { readProcStat } from '../../shared/proc.js';
import { startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { pidAlive } from '../helpers/procs.js';
import { rejection } from '../helpers/rejection.js';
import { waitFor } from '../helpers/wait.js';

const GRACE_MS = 300;

/** A scratch directory for pid files, removed after the test. */
function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'execd-escape-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Kills a pid the test made, should the daemon have missed it (so no sleep outlives the test). */
function reap(pid: number): void {
  onTestFinished(() => {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone, as it should be.
    }
  });
}

/**
 * A shell line that starts `inner` in a new session (`setsid`), detached from every pipe, writes
 * its pid to `file`, and returns once the file is written.
 */
function escapeLine(file: string, inner = 'exec sleep 300'): string {
  return `setsid bash -c 'echo $$ > ${file}; ${inner}' </dev/null >/dev/null 2>&1 & while [ ! -s ${file} ]; do sleep 0.01; done`;
}

/** The pid in a file an escape line wrote; also registers it for clean-up. */
function pidFrom(file: string): number {
  const pid = Number(readFileSync(file, 'utf8').trim());
  reap(pid);
  return pid;
}

/** Milliseconds until `pid` is gone (polls /proc, up to 8 s). */
async function goneWithin(pid: number, started: number): Promise<number> {
  await waitFor(() => !pidAlive(pid), `pid ${pid} to be gone`, { timeoutMs: 8_000 });
  return Date.now() - started;
}

/** The mode the daemon logged at start. */
function scopeMode(daemon: TestDaemon): string {
  return /"processScope":"(\w+)"/.exec(daemon.stderr())?.[1] ?? 'unknown';
}

/**
 * Waits until `daemon/status` counts `n` process groups (without a cgroup the count behind it is
 * reused for up to a second).
 */
async function countIs(client: ExecdClient, n: number): Promise<void> {
  await waitFor(async () => (await client.call(DaemonStatus, {})).processes === n, `${n} process groups counted`);
}

async function escapedRun(client: ExecdClient, sessionId: string, dir: string, name: string, inner?: string) {
  const file = join(dir, name);
  const result = await client.run({ sessionId, command: escapeLine(file, inner), timeoutMs: 10_000 });
  expect(result.exitCode).toBe(0);
  const pid = pidFrom(file);
  expect(pidAlive(pid)).toBe(true);
  return pid;
}

describe('processes that leave their group', () => {
  it('a setsid child of a run dies at session/close and counts against maxProcesses; another session keeps its own', async () => {
    const daemon = await startDaemon({ config: { graceMs: GRACE_MS, maxProcesses: 3 } });
    const dir = scratch();
    const a = await daemon.session('a');
    const b = await daemon.session('b');
    const mode = scopeMode(daemon);
    const pidA = await escapedRun(a, 'a', dir, 'a.pid');
    const pidB = await escapedRun(b, 'b', dir, 'b.pid');
    // Left its group and its session: the run's group kill would never reach it.
    const stat = readProcStat(pidA)!;
    expect(stat.session).toBe(pidA);
    await countIs(a, 2);
    const pidA2 = await escapedRun(a, 'a', dir, 'a2.pid');
    // Three escaped groups now: the limit refuses a fourth process.
    await countIs(a, 3);
    const refused = await rejection(a.call(ShellRun, { sessionId: 'a', command: 'true' }));
    expect(refused.errorName).toBe('LIMIT_EXCEEDED');
    expect(refused.message).toContain('maxProcesses');

    const started = Date.now();
    await a.call(SessionClose, { sessionId: 'a' });
    const ms = await goneWithin(pidA, started);
    await goneWithin(pidA2, started);
    expect(pidAlive(pidB)).toBe(true);
    await countIs(b, 1);
    console.log(
      `[${mode}] setsid sleep of a run: gone ${ms} ms after session/close was sent (graceMs ${GRACE_MS}); ` +
        `3 escaped groups counted, the 4th spawn refused; session b's escaped pid ${pidB} untouched`,
    );
    await b.call(SessionClose, { sessionId: 'b' });
    console.log(`[${mode}] session b's escaped sleep gone ${await goneWithin(pidB, started)} ms after`);
  });

  it('a double-forked daemon re-parented away from the run is found, also at daemon shutdown', async () => {
    const daemon = await startDaemon({ config: { graceMs: GRACE_MS } });
    const dir = scratch();
    const client = await daemon.session('s');
    const file = join(dir, 'daemonised.pid');
    // The subshell forks the setsid child and exits at once: its parent is gone, init (or a
    // subreaper) adopts it.
    const result = await client.run({ sessionId: 's', command: `(${escapeLine(file)}); true` });
    expect(result.exitCode).toBe(0);
    const pid = pidFrom(file);
    const parent = readProcStat(pid)!.ppid;
    expect(parent).not.toBe(result.pid);
    const second = await escapedRun(client, 's', dir, 'second.pid');
    const started = Date.now();
    await client.call(SessionClose, { sessionId: 's' });
    const ms = await goneWithin(pid, started);
    await goneWithin(second, started);
    // At shutdown, too: a new session's escaped process dies with the daemon.
    const again = await daemon.session('t');
    const third = await escapedRun(again, 't', dir, 'third.pid');
    const stopping = Date.now();
    await daemon.stop();
    const stopMs = await goneWithin(third, stopping);
    console.log(
      `[${scopeMode(daemon)}] double-forked sleep (parent ${parent}, not the run's shell ${result.pid}) gone ${ms} ms ` +
        `after session/close; an escaped sleep gone ${stopMs} ms after the daemon was stopped`,
    );
  });

  it("job/kill kills the job's escaped processes, running or settled", async () => {
    const daemon = await startDaemon({ config: { graceMs: GRACE_MS } });
    const dir = scratch();
    const client = await daemon.session('s');
    const other = await escapedRun(client, 's', dir, 'other.pid');
    const running = await client.call(ShellStart, {
      sessionId: 's',
      command: `${escapeLine(join(dir, 'job.pid'))}; sleep 300`,
    });
    await waitFor(() => readFileSafe(join(dir, 'job.pid')) !== '', 'the job to start its escape');
    const pid = pidFrom(join(dir, 'job.pid'));
    let started = Date.now();
    expect((await client.call(JobKill, { sessionId: 's', jobId: running.jobId })).killed).toBe(true);
    // job/kill answers once the job's processes are gone, the escaped one included.
    const runningMs = Date.now() - started;
    expect(pidAlive(pid)).toBe(false);

    const settled = await client.call(ShellStart, { sessionId: 's', command: escapeLine(join(dir, 'done.pid')) });
    await waitFor(() => readFileSafe(join(dir, 'done.pid')) !== '', 'the settled job to start its escape');
    const left = pidFrom(join(dir, 'done.pid'));
    await countIs(client, 2);
    started = Date.now();
    expect((await client.call(JobKill, { sessionId: 's', jobId: settled.jobId })).killed).toBe(true);
    const settledMs = Date.now() - started;
    expect(pidAlive(left)).toBe(false);
    // The run's escaped process belongs to the session, not to either job.
    expect(pidAlive(other)).toBe(true);
    console.log(
      `[${scopeMode(daemon)}] job/kill: a running job's setsid sleep gone in ${runningMs} ms, a settled job's in ` +
        `${settledMs} ms; the session's other escaped pid untouched`,
    );
  });

  it("a run's timeout kills what the run left its group with", async () => {
    const daemon = await startDaemon({ config: { graceMs: GRACE_MS } });
    const dir = scratch();
    const client = await daemon.session('s');
    const file = join(dir, 'timeout.pid');
    const result = await client.run({
      sessionId: 's',
      command: `${escapeLine(file)}; sleep 300`,
      timeoutMs: 1_000,
    });
    expect(result.timedOut).toBe(true);
    const pid = pidFrom(file);
    const started = Date.now();
    const ms = await goneWithin(pid, started);
    console.log(`[${scopeMode(daemon)}] run timeout: the setsid sleep was gone ${ms} ms after the run answered`);
  });

  it('terminal close kills a setsid child that ignores HUP, TERM and INT', async () => {
    const daemon = await startDaemon({ config: { graceMs: GRACE_MS } });
    const dir = scratch();
    const client = await daemon.session('s');
    const opened = await client.call(TerminalOpen, { sessionId: 's' });
    const terminalId = opened.terminal.id;
    const plainFile = join(dir, 'plain.pid');
    const stubbornFile = join(dir, 'stubborn.pid');
    for (const command of [escapeLine(plainFile), escapeLine(stubbornFile, 'trap "" HUP TERM INT; exec sleep 300')]) {
      const ran = await client.call(TerminalRun, { sessionId: 's', terminalId, command, timeoutMs: 10_000 });
      expect(ran.state).toBe('completed');
    }
    const plain = pidFrom(plainFile);
    const stubborn = pidFrom(stubbornFile);
    const other = await client.call(TerminalOpen, { sessionId: 's' });
    const otherFile = join(dir, 'other.pid');
    await client.call(TerminalRun, { sessionId: 's', terminalId: other.terminal.id, command: escapeLine(otherFile) });
    const untouched = pidFrom(otherFile);
    const started = Date.now();
    await client.call(TerminalClose, { sessionId: 's', terminalId });
    const closeMs = Date.now() - started;
    expect(pidAlive(plain)).toBe(false);
    expect(pidAlive(stubborn)).toBe(false);
    // The other terminal's escaped process is its own terminal's to kill.
    expect(pidAlive(untouched)).toBe(true);
    console.log(
      `[${scopeMode(daemon)}] terminal/close answered in ${closeMs} ms with both setsid children gone ` +
        `(one ignoring HUP/TERM/INT: SIGKILL after graceMs ${GRACE_MS}); the other terminal's kept`,
    );
  });
});

describe('without a cgroup: the environment marker', () => {
  it('finds a setsid child by its marker, not one that cleared its environment', async () => {
    const daemon = await startDaemon({ config: { graceMs: GRACE_MS }, env: { EXECD_PROCESS_SCOPE: 'environ' } });
    expect(scopeMode(daemon)).toBe('environ');
    const dir = scratch();
    const client = await daemon.session('s');
    const marked = await escapedRun(client, 's', dir, 'marked.pid');
    const cleared = await escapedRun(client, 's', dir, 'cleared.pid', 'exec env -i sleep 300');
    expect(readFileSync(`/proc/${marked}/environ`, 'utf8')).toContain('EXECD_SCOPE=');
    // The scan of /proc behind the count is reused for up to a second: the count may lag that long.
    const counting = Date.now();
    await waitFor(
      async () => (await client.call(DaemonStatus, {})).processes === 1,
      'the marked process to be counted',
    );
    const countMs = Date.now() - counting;
    const started = Date.now();
    await client.call(SessionClose, { sessionId: 's' });
    const ms = await goneWithin(marked, started);
    // What the environ scan cannot catch (docs/reliability.md says so): a process without the marker.
    expect(pidAlive(cleared)).toBe(true);
    console.log(
      `[environ] marked setsid sleep counted within ${countMs} ms, gone ${ms} ms after session/close; one that ran \`exec env -i\` survives (pid ${cleared}), as documented`,
    );
  });

  it('finds the escaped processes of a job at job/kill and of a terminal at its close by their marker', async () => {
    const daemon = await startDaemon({ config: { graceMs: GRACE_MS }, env: { EXECD_PROCESS_SCOPE: 'environ' } });
    const dir = scratch();
    const client = await daemon.session('s');
    const session = await escapedRun(client, 's', dir, 'session.pid');
    const job = await client.call(ShellStart, {
      sessionId: 's',
      command: `${escapeLine(join(dir, 'job.pid'))}; sleep 300`,
    });
    await waitFor(() => readFileSafe(join(dir, 'job.pid')) !== '', 'the job to start its escape');
    const jobPid = pidFrom(join(dir, 'job.pid'));
    let started = Date.now();
    expect((await client.call(JobKill, { sessionId: 's', jobId: job.jobId })).killed).toBe(true);
    const jobMs = Date.now() - started;
    expect(pidAlive(jobPid)).toBe(false);
    const opened = await client.call(TerminalOpen, { sessionId: 's' });
    const file = join(dir, 'terminal.pid');
    await client.call(TerminalRun, { sessionId: 's', terminalId: opened.terminal.id, command: escapeLine(file) });
    const terminalPid = pidFrom(file);
    started = Date.now();
    await client.call(TerminalClose, { sessionId: 's', terminalId: opened.terminal.id });
    const terminalMs = Date.now() - started;
    expect(pidAlive(terminalPid)).toBe(false);
    // Neither unit's kill touched the run's escaped process: it is the session's.
    expect(pidAlive(session)).toBe(true);
    console.log(
      `[environ] job/kill with an escaped sleep answered in ${jobMs} ms, terminal/close in ${terminalMs} ms, both gone; the run's kept`,
    );
  });

  it('is what an unprivileged daemon (uid 1000 in a user namespace) falls back to, and it works there', async () => {
    if (process.getuid?.() !== 0) throw new Error('this test needs root: it writes the uid/gid maps of the namespace');
    const base = mkdtempSync(join(tmpdir(), 'execd-escape-unpriv-'));
    onTestFinished(() => rmSync(base, { recursive: true, force: true }));
    // The daemon makes its own run and state directories (private to it).
    for (const dir of [base, join(base, 'pids')]) {
      mkdirSync(dir, { recursive: true });
      chownSync(dir, 1000, 1000);
    }
    const daemon = await startDaemon({
      launcher: ['bash', join(import.meta.dirname, '..', 'helpers', 'unprivileged.sh')],
      socketPath: join(base, 'run', 'execd.sock'),
      stateDir: join(base, 'state'),
      config: { graceMs: GRACE_MS },
    });
    // The cgroup tree is root's: the daemon cannot make one, so it marks its commands instead.
    expect(scopeMode(daemon)).toBe('environ');
    const client = await daemon.session('s', base);
    const pid = await escapedRun(client, 's', join(base, 'pids'), 'unprivileged.pid');
    const started = Date.now();
    await client.call(SessionClose, { sessionId: 's' });
    const ms = await goneWithin(pid, started);
    console.log(
      `[environ, uid 1000] the daemon fell back to the marker; a setsid sleep gone ${ms} ms after session/close`,
    );
  });

  it('measures the cost of finding escaped processes: a /proc environ scan against a cgroup read', () => {
    const stateDir = scratch();
    const make = (mode?: 'environ') =>
      ProcessScopes.detect({ stateDir, secret: 'x', ...(mode && { mode }), protectedPids: () => [] });
    const processes = readdirSync('/proc').filter((name) => /^\d+$/.test(name)).length;
    const owned = { pgids: new Set<number>(), sids: new Set<number>() };
    // A fresh instance each round: the environ count is otherwise reused for a second.
    const time = (mode?: 'environ') => {
      let total = 0;
      for (let i = 0; i < 20; i++) {
        const scopes = make(mode);
        const started = performance.now();
        scopes.escapedGroups(owned);
        total += performance.now() - started;
      }
      return total / 20;
    };
    const environMs = time('environ');
    const cgroup = make();
    const cgroupMs = cgroup.mode === 'cgroup' ? time() : undefined;
    cgroup.releaseAll();
    expect(environMs).toBeLessThan(200);
    console.log(
      `finding escaped processes with ${processes} processes on the machine: environ scan ${environMs.toFixed(2)} ms, ` +
        (cgroupMs === undefined
          ? 'no writable cgroup here'
          : `cgroup read ${cgroupMs.toFixed(3)} ms (${cgroup.hierarchy})`),
    );
  });
});

function readFileSafe(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}
