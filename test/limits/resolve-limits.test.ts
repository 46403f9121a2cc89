/** The one resolve step of resource limits (SPEC §17): defaults, ceilings, lowering, enforceability. Pure. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, configPatchSchema, configSchema, type Config } from '../../protocol/config.js';
import { ExecdError } from '../../protocol/errors.js';
import { formatBytes, parseSize, sessionLimitsSchema, unitLimitsSchema } from '../../protocol/limits.js';
import { SessionOpen, ShellRun } from '../../protocol/methods.js';
import { lowerLimits, openLimits, unitLimits } from '../../daemon/limits/resolve-limits.js';

const ALL = { enforces: ['memoryBytes', 'cpus', 'pids', 'sessionMemoryBytes'] as const };
const NONE = { enforces: [] as const, unavailable: 'no cgroup can be written here' };
const MiB = 1024 * 1024;

function config(patch: Partial<Config> = {}): Config {
  return { ...DEFAULT_CONFIG, ...patch };
}

function refusal(value: unknown): ExecdError {
  if (!(value instanceof ExecdError)) throw new Error(`expected a refusal, got ${JSON.stringify(value)}`);
  return value;
}

describe('openLimits', () => {
  it('takes the session its own limits, else defaultLimits field by field', () => {
    const cfg = config({ defaultLimits: { memoryBytes: 512 * MiB, pids: 256 } });
    expect(openLimits(undefined, cfg, ALL)).toEqual({ memoryBytes: 512 * MiB, pids: 256 });
    expect(openLimits({ memoryBytes: 64 * MiB, cpus: 0.5 }, cfg, ALL)).toEqual({
      memoryBytes: 64 * MiB,
      cpus: 0.5,
      pids: 256,
    });
    expect(openLimits(undefined, config(), ALL)).toEqual({});
  });

  it('refuses a limit above maxLimits, naming it and the ceiling', () => {
    const cfg = config({ maxLimits: { cpus: 1 } });
    const error = refusal(openLimits({ cpus: 2 }, cfg, ALL));
    expect(error.name).toBe('LIMIT_EXCEEDED');
    expect(error.message).toBe('limits.cpus 2 is above maxLimits.cpus (1)');
    // A default above the ceiling is refused too: the operator's two settings disagree.
    expect(
      refusal(openLimits(undefined, config({ defaultLimits: { cpus: 4 }, maxLimits: { cpus: 1 } }), ALL)).name,
    ).toBe('LIMIT_EXCEEDED');
  });

  it('is LIMIT_UNAVAILABLE for a limit nothing enforces, naming it, unless limitsOptional drops it', () => {
    const error = refusal(openLimits({ memoryBytes: 64 * MiB, pids: 10 }, config(), NONE));
    expect(error.name).toBe('LIMIT_UNAVAILABLE');
    expect(error.message).toContain(
      'limits.memoryBytes, limits.pids cannot be enforced here: no cgroup can be written here',
    );
    expect(openLimits({ memoryBytes: 64 * MiB }, config({ limitsOptional: true }), NONE)).toEqual({});
    const partial = { enforces: ['pids'] as const };
    expect(openLimits({ memoryBytes: 64 * MiB, pids: 10 }, config({ limitsOptional: true }), partial)).toEqual({
      pids: 10,
    });
  });
});

describe('lowerLimits', () => {
  it('lowers, adds a limit the session did not have, and refuses a higher one as FORBIDDEN', () => {
    const current = { memoryBytes: 256 * MiB };
    expect(lowerLimits(current, { memoryBytes: 128 * MiB, cpus: 1 }, config(), ALL, 's1')).toEqual({
      memoryBytes: 128 * MiB,
      cpus: 1,
    });
    const error = refusal(lowerLimits(current, { memoryBytes: 512 * MiB }, config(), ALL, 's1'));
    expect(error.name).toBe('FORBIDDEN');
    expect(error.message).toBe(
      `session s1: limits.memoryBytes may only be lowered (has ${256 * MiB}, asked ${512 * MiB})`,
    );
    expect(refusal(lowerLimits(undefined, { pids: 500 }, config({ maxLimits: { pids: 100 } }), ALL, 's1')).name).toBe(
      'LIMIT_EXCEEDED',
    );
  });
});

describe('unitLimits', () => {
  it("lowers the session's limits and carries its session total", () => {
    const session = { memoryBytes: 256 * MiB, sessionMemoryBytes: 1024 * MiB };
    expect(unitLimits(session, { memoryBytes: 64 * MiB, pids: 32 }, config(), ALL)).toEqual({
      memoryBytes: 64 * MiB,
      pids: 32,
      sessionMemoryBytes: 1024 * MiB,
    });
    expect(unitLimits(undefined, undefined, config(), ALL)).toBeUndefined();
    expect(unitLimits(undefined, undefined, config(), NONE)).toBeUndefined();
  });

  it("refuses a request above its session's limit or above maxLimits", () => {
    const error = refusal(unitLimits({ cpus: 0.5 }, { cpus: 1 }, config(), ALL));
    expect(error.name).toBe('LIMIT_EXCEEDED');
    expect(error.message).toBe(
      "limits.cpus 1 is above the session's (0.5): a request may only lower its session's limits",
    );
    expect(refusal(unitLimits(undefined, { pids: 200 }, config({ maxLimits: { pids: 100 } }), ALL)).message).toBe(
      'limits.pids 200 is above maxLimits.pids (100)',
    );
    expect(refusal(unitLimits(undefined, { pids: 20 }, config(), NONE)).name).toBe('LIMIT_UNAVAILABLE');
  });
});

describe('the limits schemas', () => {
  it('validate every field with a message naming it', () => {
    const run = ShellRun.params.safeParse({ sessionId: 's', command: 'true', limits: { memoryBytes: 10 } });
    expect(run.success).toBe(false);
    expect(run.error?.issues[0]?.path).toEqual(['limits', 'memoryBytes']);
    expect(run.error?.issues[0]?.message).toBe('must be a whole number of bytes from 4194304');
    // A request cannot name the session's total.
    expect(unitLimitsSchema().safeParse({ sessionMemoryBytes: 64 * MiB }).success).toBe(false);
    expect(sessionLimitsSchema().safeParse({ cpus: 0 }).error?.issues[0]?.message).toBe(
      'must be a number of CPUs from 0.01 to 1024',
    );
    expect(SessionOpen.params.safeParse({ sessionId: 's', limits: { pids: 5 } }).error?.issues[0]?.message).toContain(
      'or limits',
    );
  });

  it('are in the configuration: defaultLimits, maxLimits (null unsets them), limitsOptional', () => {
    expect(configSchema().safeParse({ ...DEFAULT_CONFIG, maxLimits: { pids: 0 } }).error?.issues[0]?.path).toEqual([
      'maxLimits',
      'pids',
    ]);
    expect(configPatchSchema().safeParse({ defaultLimits: null, limitsOptional: true }).success).toBe(true);
    expect(configPatchSchema().safeParse({ limitsOptional: 'yes' }).error?.issues[0]?.message).toBe(
      'must be a boolean',
    );
  });

  it('sizes read and print in binary units', () => {
    expect(parseSize('512M')).toBe(512 * MiB);
    expect(parseSize('1.5G')).toBe(1.5 * 1024 * MiB);
    expect(parseSize('256MiB')).toBe(256 * MiB);
    expect(parseSize('4096')).toBe(4096);
    expect(parseSize('lots')).toBeUndefined();
    expect(formatBytes(512 * MiB)).toBe('512 MiB');
    expect(formatBytes(1.5 * 1024 * MiB)).toBe('1.5 GiB');
    expect(formatBytes(100)).toBe('100 B');
  });
});
