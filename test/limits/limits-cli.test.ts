/**
 * `execd run --memory/--cpus/--pids`, `execd start --memory` and `execd status` through the built
 * CLI, on this machine's real cgroups (SPEC §17).
 */
import { describe, expect, it } from 'vitest';
import { cliWorld } from '../helpers/cli.js';

const ALLOCATE_200 = "/usr/bin/python3 -c 'x = bytearray(200 << 20)'";

describe('execd limits flags', { timeout: 120_000 }, () => {
  it('run --memory kills the command with the marker; status shows the resource limits and the session use', async () => {
    const world = cliWorld();
    const run = await world.run(['run', '--memory', '32M', '--cpus', '0.5', '--pids', '64', '--', ALLOCATE_200]);
    expect(run.code).toBe(137);
    expect(run.stderr).toBe('[killed: out of memory (limit 32 MiB)]\n[killed by signal: SIGKILL]\n');
    const rendered = await world.run(['run', '--render', '--memory', '32M', '--', ALLOCATE_200]);
    expect(rendered.stdout).toBe('(no output)\n[killed: out of memory (limit 32 MiB)]\n[killed by signal: SIGKILL]\n');
    const bad = await world.run(['run', '--memory', 'lots', '--', 'true']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--memory must be a size such as 512M or 2G, got "lots"');

    const started = await world.run(['start', '--json', '--memory', '32M', '--', ALLOCATE_200]);
    expect(started.code).toBe(0);
    const { jobId } = JSON.parse(started.stdout) as { jobId: string };
    const waited = await world.run(['wait', jobId]);
    expect(waited.stdout + waited.stderr).toContain(
      `${jobId} killed (signal: SIGKILL) [killed: out of memory (limit 32 MiB)]`,
    );

    const status = await world.run(['status']);
    expect(status.stdout).toMatch(
      /^resource limits +cgroup(1|2), enforces memoryBytes, cpus, pids, sessionMemoryBytes$/m,
    );
    expect(status.stdout).toMatch(/^SESSION +MEMORY +PEAK +CPU TIME +LIMITS$/m);
  });
});
