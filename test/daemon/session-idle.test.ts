/** When a session counts as idle and may be closed by the daemon. */
import { describe, expect, it } from 'vitest';
import { sessionIsIdle } from '../../daemon/sessions/session-lifecycle.js';

const quiet = { connections: 0, liveJobs: 0, liveGroups: 0, lastActiveAt: 1_000 };

describe('sessionIsIdle', () => {
  it('is idle only once nothing holds it and it was quiet for idleMs', () => {
    expect(sessionIsIdle(quiet, 1_999, 1_000)).toBe(false);
    expect(sessionIsIdle(quiet, 2_000, 1_000)).toBe(true);
  });

  it('is never idle while a connection holds it, a job runs, or a process of it lives', () => {
    expect(sessionIsIdle({ ...quiet, connections: 1 }, 99_999, 1_000)).toBe(false);
    expect(sessionIsIdle({ ...quiet, liveJobs: 1 }, 99_999, 1_000)).toBe(false);
    expect(sessionIsIdle({ ...quiet, liveGroups: 1 }, 99_999, 1_000)).toBe(false);
  });
});
