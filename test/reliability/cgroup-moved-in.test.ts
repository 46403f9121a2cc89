/**
 * In the cgroup mode a kill of a unit reaches only what descends from what the daemon started in
 * it: an unconfined root command that moves an outside process and another session's job into its
 * own unit's cgroup (as any root process can, by writing `cgroup.procs`) does not get them killed
 * when its session closes, while its own escaped `setsid` child still dies. Nor does another
 * session's orphan: what a finished run of it left behind (re-parented to init, so no live
 * ancestry ties it to its own session any more), started after the attacker's unit was made.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished, type TestContext } from 'vitest';
import { parseCgroupHomes } from '../../daemon/processes/process-scopes.js';
import { JobList, SessionClose, ShellStart } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { readProcStat } from '../../shared/proc.js';
import { pidAlive } from '../helpers/procs.js';
import { waitFor } from '../helpers/wait.js';

/** The cgroup directory a process is in (v2 first, as the daemon picks it). */
function cgroupOf(pid: number): string {
  const homes = parseCgroupHomes(
    readFileSync(`/proc/${pid}/cgroup`, 'utf8'),
    readFileSync('/proc/self/mountinfo', 'utf8'),
  );
  return homes[0]!.dir;
}

/** Kills a pid the test made, whatever the daemon did. */
function reap(pid: number): void {
  onTestFinished(() => {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone.
    }
  });
}

/** A daemon in the cgroup scope mode and a scratch dir, or the test skipped where it runs in another. */
async function cgroupDaemon(ctx: TestContext, why: string) {
  const daemon = await startDaemon({ config: { graceMs: 300 } });
  const mode = /"processScope":"(\w+)"/.exec(daemon.stderr())?.[1];
  if (mode !== 'cgroup') ctx.skip(`${why}; the daemon runs in the ${mode} scope mode here, not cgroup`);
  const dir = mkdtempSync(join(tmpdir(), 'execd-moved-in-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return { daemon, dir };
}

describe('cgroup units kill only their own descendants', { timeout: 60_000 }, () => {
  it('an outside process and another session’s job moved into a unit survive its session’s close', async (ctx) => {
    const { daemon, dir } = await cgroupDaemon(ctx, 'only a cgroup can be moved into');

    const outside = spawn('sleep', ['600'], { stdio: 'ignore' });
    reap(outside.pid!);
    const victim = await daemon.session('victim');
    const { jobId, pid: victimPid } = await victim.call(ShellStart, { sessionId: 'victim', command: 'exec sleep 601' });
    reap(victimPid);
    const attacker = await daemon.session('attacker');
    const escaped = join(dir, 'escaped.pid');
    const { pid: attackerPid } = await attacker.call(ShellStart, {
      sessionId: 'attacker',
      command: `setsid bash -c 'echo $$ > ${escaped}; exec sleep 602' </dev/null >/dev/null 2>&1 & exec sleep 603`,
    });
    await waitFor(
      () => existsSync(escaped) && readFileSync(escaped, 'utf8').trim() !== '',
      'the escaped child to start',
    );
    const escapedPid = Number(readFileSync(escaped, 'utf8').trim());
    reap(escapedPid);

    // What an unconfined root command of the attacker's could do: move both into its own unit.
    const unit = cgroupOf(attackerPid);
    expect(unit).toContain('execd-');
    for (const pid of [outside.pid!, victimPid]) writeFileSync(join(unit, 'cgroup.procs'), String(pid));
    expect(cgroupOf(outside.pid!)).toBe(unit);
    expect(cgroupOf(victimPid)).toBe(unit);

    await attacker.call(SessionClose, { sessionId: 'attacker' });
    await waitFor(() => !pidAlive(escapedPid) && !pidAlive(attackerPid), "the attacker's own processes to die", {
      timeoutMs: 8_000,
    });
    // Give a stray kill its grace and more before looking.
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(pidAlive(outside.pid!)).toBe(true);
    expect(pidAlive(victimPid)).toBe(true);
    const [job] = await victim.call(JobList, { sessionId: 'victim' });
    expect(job).toMatchObject({ id: jobId, status: 'running' });
  });

  it('another session’s orphans moved into a unit survive its session’s close', async (ctx) => {
    const { daemon, dir } = await cgroupDaemon(ctx, 'only a cgroup can be moved into');

    // The attacker's unit is made first: the victim's orphans start after it, as its own would.
    const attacker = await daemon.session('attacker');
    const { pid: attackerPid } = await attacker.call(ShellStart, { sessionId: 'attacker', command: 'exec sleep 610' });
    reap(attackerPid);
    const victim = await daemon.session('victim');
    const escapedFile = join(dir, 'victim-escaped.pid');
    const leftoverFile = join(dir, 'victim-leftover.pid');
    // A finished run's `setsid` child and its plain background child: both outlive the run.
    const result = await victim.run({
      sessionId: 'victim',
      command:
        `setsid bash -c 'echo $$ > ${escapedFile}; exec sleep 611' </dev/null >/dev/null 2>&1 & ` +
        `bash -c 'echo $$ > ${leftoverFile}; exec sleep 612' </dev/null >/dev/null 2>&1 & ` +
        `while [ ! -s ${escapedFile} ] || [ ! -s ${leftoverFile} ]; do sleep 0.01; done`,
      timeoutMs: 10_000,
    });
    expect(result.exitCode).toBe(0);
    const orphans = [escapedFile, leftoverFile].map((file) => Number(readFileSync(file, 'utf8').trim()));
    for (const pid of orphans) reap(pid);
    // The run's shell is gone: they were re-parented out of the daemon's cgroups, so no live
    // ancestor ties them to the victim's session.
    for (const pid of orphans)
      expect(readFileSync(`/proc/${readProcStat(pid)!.ppid}/cgroup`, 'utf8')).not.toContain('execd-');

    const unit = cgroupOf(attackerPid);
    for (const pid of orphans) writeFileSync(join(unit, 'cgroup.procs'), String(pid));
    for (const pid of orphans) expect(cgroupOf(pid)).toBe(unit);

    await attacker.call(SessionClose, { sessionId: 'attacker' });
    await waitFor(() => !pidAlive(attackerPid), "the attacker's job to die", { timeoutMs: 8_000 });
    await new Promise((resolve) => setTimeout(resolve, 800));
    for (const pid of orphans) expect(pidAlive(pid)).toBe(true);
  });

  it('a unit’s own orphan that cleared its environment still dies with its session', async (ctx) => {
    const { daemon, dir } = await cgroupDaemon(
      ctx,
      'the environ mode finds a process only by its marker, and `env -i` removed it',
    );
    const pidFile = join(dir, 'cleared.pid');
    const owner = await daemon.session('owner');
    const result = await owner.run({
      sessionId: 'owner',
      command:
        `setsid env -i /bin/bash -c 'echo $$ > ${pidFile}; exec sleep 620' </dev/null >/dev/null 2>&1 & ` +
        `while [ ! -s ${pidFile} ]; do sleep 0.01; done`,
      timeoutMs: 10_000,
    });
    expect(result.exitCode).toBe(0);
    const orphan = Number(readFileSync(pidFile, 'utf8').trim());
    reap(orphan);
    // An orphan now, with no marker in its environment: only its cgroup ties it to the session.
    expect(readFileSync(`/proc/${orphan}/environ`, 'utf8')).not.toContain('EXECD_SCOPE');
    expect(cgroupOf(orphan)).toContain('execd-');

    await owner.call(SessionClose, { sessionId: 'owner' });
    await waitFor(() => !pidAlive(orphan), 'the cleared orphan to die with its session', { timeoutMs: 8_000 });
  });
});
