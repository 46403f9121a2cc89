/** Which settled jobs the table releases: past the age bound, then the oldest past the count. */
import { describe, expect, it } from 'vitest';
import { settledToRelease } from '../../../daemon/jobs/retention.js';

const entries = (...finished: number[]) => finished.map((finishedAtMs, i) => ({ id: `bash-${i + 1}`, finishedAtMs }));

describe('settledToRelease', () => {
  it('releases the oldest past maxSettledJobs', () => {
    const bounds = { maxSettledJobs: 2, settledJobRetentionMs: 1_000_000 };
    expect(settledToRelease(entries(30, 10, 20, 40), 100, bounds)).toEqual(['bash-2', 'bash-3']);
    expect(settledToRelease(entries(30, 10), 100, bounds)).toEqual([]);
  });

  it('releases every job settled longer ago than settledJobRetentionMs', () => {
    const bounds = { maxSettledJobs: 100, settledJobRetentionMs: 50 };
    expect(settledToRelease(entries(10, 60, 49, 51), 100, bounds)).toEqual(['bash-1', 'bash-3']);
  });

  it('applies whichever bound releases more', () => {
    expect(settledToRelease(entries(10, 20, 90, 95), 100, { maxSettledJobs: 1, settledJobRetentionMs: 50 })).toEqual([
      'bash-1',
      'bash-2',
      'bash-3',
    ]);
  });
});
