/** The reconnecting client's pure policy: bounded backoff, which calls get a key. */
import { describe, expect, it } from 'vitest';
import { backoffMs, DEFAULT_RECONNECT, reconnectPolicy, withKey } from '../../client/reconnect.js';

describe('reconnect policy', () => {
  it('backs off exponentially, capped at maxDelayMs, with at most 25 % jitter below', () => {
    const waits = Array.from({ length: 12 }, (_, attempt) => backoffMs(DEFAULT_RECONNECT, attempt, () => 1));
    expect(waits.slice(0, 4)).toEqual([100, 200, 400, 800]);
    expect(Math.max(...waits)).toBe(5_000);
    expect(backoffMs(DEFAULT_RECONNECT, 50, () => 0)).toBe(3_750);
  });

  it('refuses a bound that is not a positive integer, naming it', () => {
    expect(() => reconnectPolicy({ maxAttempts: 0 })).toThrow(
      'reconnect.maxAttempts must be a positive integer, got 0',
    );
    expect(reconnectPolicy(false)).toBeUndefined();
    expect(reconnectPolicy(true)).toEqual(DEFAULT_RECONNECT);
  });

  it('keys side-effecting calls the caller did not key, and only those', () => {
    const keyed = withKey('shell/start', { sessionId: 's', command: 'x' }) as { requestKey?: string };
    expect(keyed.requestKey).toMatch(/^[0-9a-f-]{36}$/);
    expect(withKey('shell/start', { sessionId: 's', command: 'x', requestKey: 'mine' }).requestKey).toBe('mine');
    expect(withKey('job/read', { sessionId: 's', jobId: 'bash-1' })).not.toHaveProperty('requestKey');
  });
});
