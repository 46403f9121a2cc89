/**
 * An upgrade in place (`execd upgrade`, docs/deployment.md), with real daemons: the daemon execs
 * its program under the same pid; its socket and `--listen` listeners are handed over by
 * descriptor (a client connecting meanwhile is never refused); a client connected before
 * reconnects to the same pid; keyed and unkeyed calls work after it; running jobs (spawned inline
 * and by the spawner process) go on, read on without a gap and settle with their real exit status;
 * and a new program that does not start leaves the daemon serving, unchanged.
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect as netConnect } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { connect } from '../../client/connect.js';
import {
  DaemonStatus,
  DaemonUpgrade,
  JobList,
  JobRead,
  JobWait,
  ShellRun,
  ShellStart,
  TerminalList,
  TerminalOpen,
} from '../../protocol/methods.js';
import { TERMINALS_END_AT_UPGRADE } from '../../daemon/upgrade/upgrade.js';
import { CLI, startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { rejection } from '../helpers/rejection.js';

/** Runs the built `execd ARGS` (or `cli`) against `daemon`; resolves with its exit code, stdout and stderr. */
function cli(
  daemon: TestDaemon,
  args: string[],
  entry = CLI,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = { ...process.env, EXECD_SOCKET: daemon.socketPath, EXECD_STATE_DIR: daemon.stateDir };
  const child = spawn(process.execPath, [entry, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

/**
 * Dials `path` every 5 ms until stopped: how many dials were refused (ENOENT, ECONNREFUSED), and
 * the longest stretch in ms from the first refusal of a run of them to the next accepted dial.
 */
function dialer(path: string): { stop(): Promise<{ dials: number; refused: number; longestRefusalMs: number }> } {
  const state = { running: true };
  let dials = 0;
  let refused = 0;
  let refusingSince: number | undefined;
  let longest = 0;
  const loop = (async () => {
    while (state.running) {
      const outcome = await new Promise<'ok' | 'refused'>((resolve) => {
        const socket = netConnect(path);
        socket.once('connect', () => {
          socket.destroy();
          resolve('ok');
        });
        socket.once('error', () => resolve('refused'));
      });
      dials += 1;
      const now = performance.now();
      if (outcome === 'refused') {
        refused += 1;
        refusingSince ??= now;
      } else if (refusingSince !== undefined) {
        longest = Math.max(longest, now - refusingSince);
        refusingSince = undefined;
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  return {
    async stop() {
      state.running = false;
      await loop;
      return { dials, refused, longestRefusalMs: Math.round(longest) };
    },
  };
}

/** The numbers of `prefix N` lines in `text`, in order. */
function numbers(text: string, prefix: string): number[] {
  return [...text.matchAll(new RegExp(`^${prefix} (\\d+)$`, 'gm'))].map((match) => Number(match[1]));
}

describe('execd upgrade', { timeout: 120_000 }, () => {
  it('execs under the same pid with the listeners handed over: never refused, a run in flight answered aborted, the client reconnects, keyed and unkeyed calls work', async () => {
    const daemon = await startDaemon({ extraArgs: ['--listen', 'tcp://127.0.0.1:0'] });
    const client = await daemon.connect({ reconnect: true });
    const before = client.info.daemon;
    const listeners = (await client.call(DaemonStatus, {})).listeners;
    expect(listeners).toHaveLength(1);
    // A foreground run in flight is answered, aborted, before the connections close.
    const runner = await daemon.session('r1');
    const inFlight = runner.call(ShellRun, { sessionId: 'r1', command: 'sleep 30' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const reconnected = new Promise((resolve) => client.onReconnected(resolve));
    const dials = dialer(daemon.socketPath);
    const started = performance.now();
    const upgraded = await cli(daemon, ['upgrade']);
    const upgradeMs = Math.round(performance.now() - started);
    const dialed = await dials.stop();
    console.log(`execd upgrade took ${upgradeMs} ms; socket dials during it: ${JSON.stringify(dialed)}`);
    expect(upgraded.stderr).toBe('');
    expect(upgraded.code).toBe(0);
    expect(upgraded.stdout).toMatch(new RegExp(`^execd daemon upgraded in place \\(pid ${daemon.pid}\\)`));
    expect(dialed.dials).toBeGreaterThan(5);
    expect(dialed.refused).toBe(0);
    expect(await inFlight).toMatchObject({ aborted: true, daemonStopped: true });
    // The same process throughout: the test's child never exited.
    expect(daemon.proc.exitCode).toBeNull();
    await reconnected;
    expect(client.info.daemon.pid).toBe(before.pid);
    expect(client.info.daemon.startedAt).not.toBe(before.startedAt);
    const status = await client.call(DaemonStatus, {});
    expect(status.pid).toBe(daemon.pid);
    // The TCP listener is the one handed over: the same address.
    expect(status.listeners).toEqual(listeners);
    const token = readFileSync(join(daemon.stateDir, 'token'), 'utf8').trim();
    const overTcp = await connect({ url: listeners[0]!, token, clientName: 'test' });
    expect(overTcp.info.daemon.pid).toBe(daemon.pid);
    overTcp.close();
    const session = await daemon.session('s1');
    const unkeyed = await session.call(ShellRun, { sessionId: 's1', command: 'echo unkeyed' });
    expect('stdout' in unkeyed && unkeyed.stdout.text).toBe('unkeyed\n');
    const keyed = { sessionId: 's1', command: 'echo $RANDOM', requestKey: 'after-upgrade' };
    const first = await session.call(ShellRun, keyed);
    expect(await session.call(ShellRun, keyed)).toEqual(first);
    // The new program wrote its own start into the same log.
    expect(daemon.stderr().match(/"msg":"listening"/g)).toHaveLength(2);
  });

  it('keeps running jobs: they read on without a gap and settle with their real exit status; terminals end with the reason', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    // The second starts while the first runs: the spawner process spawns it, and must let it go.
    const counter = await client.call(ShellStart, {
      sessionId: 's1',
      command: 'for i in $(seq 1 40); do echo "line $i"; sleep 0.05; done; exit 7',
    });
    const sleeper = await client.call(ShellStart, { sessionId: 's1', command: 'sleep 1; exit 5' });
    expect((await client.call(DaemonStatus, {})).spawns).toEqual({ inline: 1, spawner: 1 });
    await client.call(TerminalOpen, { sessionId: 's1' });
    const early = await client.call(JobRead, { sessionId: 's1', jobId: counter.jobId });
    const upgraded = await cli(daemon, ['upgrade']);
    expect(upgraded.code).toBe(0);
    const after = await daemon.session('s1');
    const listed = await after.call(JobList, { sessionId: 's1' });
    console.log(`after the upgrade: ${listed.map((job) => `${job.id} ${job.status}`).join(', ')}`);
    const counted = await after.call(JobWait, { sessionId: 's1', jobId: counter.jobId, timeoutMs: 20_000 });
    expect(counted).toMatchObject({ status: 'completed', exitCode: 7 });
    const slept = await after.call(JobWait, { sessionId: 's1', jobId: sleeper.jobId, timeoutMs: 20_000 });
    expect(slept).toMatchObject({ status: 'completed', exitCode: 5 });
    const rest = await after.call(JobRead, { sessionId: 's1', jobId: counter.jobId });
    const lines = numbers(early.delta + rest.delta, 'line');
    console.log(
      `counter: ${numbers(early.delta, 'line').length} lines read before the upgrade, ${lines.length} in all`,
    );
    expect(lines).toEqual(Array.from({ length: 40 }, (_, index) => index + 1));
    const terminals = await after.call(TerminalList, { sessionId: 's1' });
    expect(terminals.map((terminal) => [terminal.status, terminal.detail])).toEqual([
      ['exited', TERMINALS_END_AT_UPGRADE],
    ]);
  });

  it('leaves the daemon serving, unchanged, when the new program does not start', async () => {
    // A copy of the bundle beside the real one (same node_modules, same package.json above it).
    const bundle = mkdtempSync(join(CLI, '..', '..', 'bundle-upgrade-'));
    onTestFinished(() => rmSync(bundle, { recursive: true, force: true }));
    cpSync(join(CLI, '..'), bundle, { recursive: true });
    const entry = join(bundle, 'main.js');
    const daemon = await startDaemon({ cli: entry });
    const client = await daemon.session('s1');
    const job = await client.call(ShellStart, { sessionId: 's1', command: 'sleep 30' });
    writeFileSync(entry, 'this is not javascript(\n');
    const failed = await rejection(client.call(DaemonUpgrade, {}));
    console.log(`refused upgrade: ${failed.message}`);
    expect(failed.message).toContain('the new program does not start');
    expect((failed.data as { code?: string } | undefined)?.code).toBe('UPGRADE_FAILED');
    const status = await client.call(DaemonStatus, {});
    expect(status.pid).toBe(daemon.pid);
    expect(status.jobs.running).toBe(1);
    const still = await client.call(ShellRun, { sessionId: 's1', command: 'echo still' });
    expect('stdout' in still && still.stdout.text).toBe('still\n');
    expect((await client.call(JobList, { sessionId: 's1' }))[0]).toMatchObject({ id: job.jobId, status: 'running' });
    const cliFailed = await cli(daemon, ['upgrade']);
    expect(cliFailed.code).not.toBe(0);
    expect(cliFailed.stderr).toContain('the new program does not start');
  });
});
