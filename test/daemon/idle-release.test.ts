/** `IdleRelease` (daemon/host/idle-release.ts): when an unused helper is let go, on a fake clock. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { HELPER_IDLE_MS, IdleRelease, MAX_HELPER_IDLE_MS } from '../../daemon/host/idle-release.js';

describe('IdleRelease', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('releases HELPER_IDLE_MS after idle(), not when work came before', () => {
    const release = vi.fn(() => true);
    const idle = new IdleRelease(release);
    idle.idle();
    vi.advanceTimersByTime(HELPER_IDLE_MS - 1);
    idle.cancel();
    vi.advanceTimersByTime(HELPER_IDLE_MS * 2);
    expect(release).not.toHaveBeenCalled();
    idle.idle();
    vi.advanceTimersByTime(HELPER_IDLE_MS);
    expect(release).toHaveBeenCalledTimes(1);
  });

  it('doubles the idle time for a helper needed again soon after it ended, up to the maximum, and resets after a long pause', () => {
    const releasedAfter: number[] = [];
    let idleSince = 0;
    const idle = new IdleRelease(() => (releasedAfter.push(Date.now() - idleSince), true));
    const cycle = (pauseAfterRelease: number) => {
      idleSince = Date.now();
      idle.idle();
      vi.advanceTimersToNextTimer();
      vi.advanceTimersByTime(pauseAfterRelease);
      idle.cancel();
    };
    // Each time needed again 1 s after it ended: 2, 4, 8, 16, 32, then 60 s (the maximum).
    for (let i = 0; i < 7; i++) cycle(1_000);
    expect(releasedAfter).toEqual([2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000]);
    // Left alone for longer than ten times its idle time: back to the first.
    cycle(MAX_HELPER_IDLE_MS * 10);
    cycle(0);
    expect(releasedAfter.slice(-2)).toEqual([60_000, HELPER_IDLE_MS]);
  });

  it('a release that declined (the helper was busy) is no end: the idle time stays', () => {
    let busy = true;
    const releasedAfter: number[] = [];
    let idleSince = 0;
    const idle = new IdleRelease(() => {
      if (busy) return false;
      releasedAfter.push(Date.now() - idleSince);
      return true;
    });
    idle.idle();
    vi.advanceTimersByTime(HELPER_IDLE_MS);
    idle.cancel();
    busy = false;
    idleSince = Date.now();
    idle.idle();
    vi.advanceTimersToNextTimer();
    expect(releasedAfter).toEqual([HELPER_IDLE_MS]);
  });
});
