/**
 * The cgroup v2 strategy of resource limits, on a directory tree shaped like a delegated cgroup v2
 * subtree (this machine mounts its controllers as v1, so a real v2 delegation cannot be made here:
 * the files it writes and reads are checked instead; the v1 strategy runs for real in limits.test.ts).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { CgroupV2Limits } from '../../daemon/limits/cgroup-limits.js';
import type { CgroupLayout } from '../../daemon/limits/limit-backend.js';
import { keyedCounter } from '../../daemon/limits/limit-backend.js';

const layout: CgroupLayout = {
  base: 'execd-test',
  session: (sessionId) => join('execd-test', `s-${sessionId}`),
  unit: (sessionId, unit) => join('execd-test', `s-${sessionId}`, `u-${unit}`),
};

/** A fake delegated cgroup v2 home with `controllers`. */
function fakeHome(controllers: string): string {
  const root = mkdtempSync(join(tmpdir(), 'execd-cg2-'));
  onTestFinished(() => rmSync(root, { recursive: true, force: true }));
  writeFileSync(join(root, 'cgroup.controllers'), `${controllers}\n`);
  writeFileSync(join(root, 'cgroup.procs'), '');
  return root;
}

const read = (path: string) => readFileSync(path, 'utf8');

describe('CgroupV2Limits', () => {
  it('enables the delegated controllers down the subtree and writes memory.max, cpu.max and pids.max', () => {
    const root = fakeHome('cpuset cpu io memory pids');
    const limits = CgroupV2Limits.detect(root, layout, 4242);
    if (!(limits instanceof CgroupV2Limits)) throw new Error(limits.reason);
    expect(limits.capability).toEqual({
      backend: 'cgroup2',
      enforces: ['memoryBytes', 'cpus', 'pids', 'sessionMemoryBytes'],
    });
    expect(read(join(root, 'cgroup.subtree_control'))).toBe('+memory +cpu +pids');
    expect(read(join(root, 'execd-test', 'cgroup.subtree_control'))).toBe('+memory +cpu +pids');
    const also = limits.prepareUnit('a', 'run-1', {
      memoryBytes: 64 << 20,
      cpus: 0.25,
      pids: 32,
      sessionMemoryBytes: 256 << 20,
    });
    expect(also).toEqual([]);
    const session = join(root, 'execd-test', 's-a');
    const unit = join(session, 'u-run-1');
    expect(read(join(session, 'cgroup.subtree_control'))).toBe('+memory +cpu +pids');
    expect(read(join(session, 'memory.max'))).toBe(String(256 << 20));
    expect(read(join(unit, 'memory.max'))).toBe(String(64 << 20));
    expect(read(join(unit, 'memory.swap.max'))).toBe('0');
    expect(read(join(unit, 'cpu.max'))).toBe('25000 100000');
    expect(read(join(unit, 'pids.max'))).toBe('32');
  });

  it("reports an OOM kill from memory.events, the unit's limit when it hit it, and a refused fork from pids.events", () => {
    const root = fakeHome('memory pids');
    const limits = CgroupV2Limits.detect(root, layout, 4242);
    if (!(limits instanceof CgroupV2Limits)) throw new Error(limits.reason);
    expect(limits.capability.enforces).toEqual(['memoryBytes', 'pids', 'sessionMemoryBytes']);
    expect(limits.capability.unavailable).toBe('cgroup v2 without the cpu controller');
    const unitLimits = { memoryBytes: 64 << 20, pids: 8, sessionMemoryBytes: 256 << 20 };
    limits.prepareUnit('a', 'run-1', unitLimits);
    const unit = join(root, 'execd-test', 's-a', 'u-run-1');
    expect(limits.report('a', 'run-1', unitLimits)).toEqual({});
    writeFileSync(join(unit, 'memory.events'), 'low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n');
    writeFileSync(join(unit, 'pids.events'), 'max 3\n');
    expect(limits.report('a', 'run-1', unitLimits)).toEqual({
      oomKilled: true,
      oomLimitBytes: 64 << 20,
      pidsLimitReached: 8,
    });
    // Killed without reaching its own limit: the session's total was reached.
    writeFileSync(join(unit, 'memory.events'), 'max 0\noom_kill 1\n');
    expect(limits.report('a', 'run-1', unitLimits).oomLimitBytes).toBe(256 << 20);
  });

  it("reads a session's usage from memory.current, memory.peak and cpu.stat", () => {
    const root = fakeHome('memory cpu pids');
    const limits = CgroupV2Limits.detect(root, layout, 4242);
    if (!(limits instanceof CgroupV2Limits)) throw new Error(limits.reason);
    expect(limits.usage('a')).toBeUndefined();
    const session = join(root, 'execd-test', 's-a');
    mkdirSync(session, { recursive: true });
    writeFileSync(join(session, 'memory.current'), '1048576\n');
    writeFileSync(join(session, 'memory.peak'), '4194304\n');
    writeFileSync(join(session, 'cpu.stat'), 'usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n');
    expect(limits.usage('a')).toEqual({ memoryBytes: 1048576, memoryPeakBytes: 4194304, cpuMicros: 1500 });
  });

  it('without a delegated controller there is nothing to enforce: the caller tries v1', () => {
    const root = fakeHome('cpuset io');
    expect(CgroupV2Limits.detect(root, layout, 4242)).toEqual({
      reason: `cgroup v2 at ${root} has no memory, cpu or pids controller`,
    });
  });

  it('a home whose subtree cannot be delegated moves the daemon back and says why', () => {
    const root = fakeHome('memory');
    // A subtree_control that cannot be written (a directory here; EBUSY on a shared real cgroup).
    mkdirSync(join(root, 'cgroup.subtree_control'));
    const result = CgroupV2Limits.detect(root, layout, 4242);
    expect(result).toHaveProperty('reason');
    expect((result as { reason: string }).reason).toContain('cannot enable memory below');
    expect(read(join(root, 'cgroup.procs'))).toBe('4242');
  });

  it('reads flat-keyed counters', () => {
    expect(keyedCounter('max 0\noom_kill 3\n', 'oom_kill')).toBe(3);
    expect(keyedCounter('oom_kill_disable 0\nunder_oom 0\noom_kill 2\n', 'oom_kill')).toBe(2);
    expect(keyedCounter(undefined, 'max')).toBe(0);
  });
});
