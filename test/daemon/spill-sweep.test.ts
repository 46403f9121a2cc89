/** The retention sweep's policy: age first, then quota oldest first, never an open file. */
import { describe, expect, it } from 'vitest';
import { planSweep, type SpillEntry } from '../../daemon/state/spill-sweep.js';

const file = (path: string, bytes: number, mtimeMs: number, open = false): SpillEntry => ({
  path,
  bytes,
  mtimeMs,
  open,
});
const paths = (entries: SpillEntry[]) => entries.map((entry) => entry.path).sort();

describe('planSweep', () => {
  it('removes closed files older than spillRetentionMs, never open ones', () => {
    const plan = planSweep([file('old', 10, 0), file('old-open', 10, 0, true), file('new', 10, 900)], {
      now: 1_000,
      spillRetentionMs: 500,
      spillQuotaBytes: 1_000,
    });
    expect(paths(plan.remove)).toEqual(['old']);
    expect(plan).toMatchObject({ keptBytes: 20, keptFiles: 2 });
  });

  it('past the quota removes closed files oldest first until the rest fits', () => {
    const entries = [file('c', 40, 300), file('a', 40, 100), file('live', 40, 50, true), file('b', 40, 200)];
    const plan = planSweep(entries, { now: 400, spillRetentionMs: 10_000, spillQuotaBytes: 90 });
    expect(plan.remove.map((entry) => entry.path)).toEqual(['a', 'b']);
    expect(plan.keptBytes).toBe(80);
  });

  it('leaves open files even when they alone pass the quota, and reports the bytes', () => {
    const plan = planSweep([file('live', 500, 0, true), file('done', 1, 1)], {
      now: 2,
      spillRetentionMs: 10,
      spillQuotaBytes: 100,
    });
    expect(paths(plan.remove)).toEqual(['done']);
    expect(plan.keptBytes).toBe(500);
  });
});
