/**
 * In the cgroup mode a kill of a unit reaches only what descends from what the daemon started in
 * it: an unconfined root command that moves an outside process and another session's job into its
 * own unit's cgroup (as any root process can, by writing `cgroup.procs`) does not get them killed
 * when its session closes, while its own escaped `setsid` child still dies.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { parseCgroupHomes } from '../../daemon/processes/process-scopes.js';
import { JobList, SessionClose, ShellStart } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
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

describe('cgroup units kill only their own descendants', { timeout: 60_000 }, () => {
  it('an outside process and another session’s job moved into a unit survive its session’s close', async (ctx) => {
    const daemon = await startDaemon({ config: { graceMs: 300 } });
    const mode = /"processScope":"(\w+)"/.exec(daemon.stderr())?.[1];
    // Only a cgroup can be moved into; the environ mode has nothing to move.
    if (mode !== 'cgroup') ctx.skip(`the daemon runs in the ${mode} scope mode here, not cgroup`);
    const dir = mkdtempSync(join(tmpdir(), 'execd-moved-in-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));

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
});
