/**
 * The configuration a session's call is bound by: its snapshot narrowed by the live configuration.
 * A lowered limit holds at once, a raised one only for sessions opened later; defaults stay.
 */
import { describe, expect, it } from 'vitest';
import { boundConfig, clampTimeout, DEFAULT_CONFIG, NARROWING_FIELDS, type Config } from '../../protocol/config.js';

const snapshot: Config = { ...DEFAULT_CONFIG, maxTimeoutMs: 600_000, timeoutMs: 120_000, maxOutputBytes: 64_000 };

describe('boundConfig', () => {
  it('takes a lowered limit from the live configuration', () => {
    const bound = boundConfig(snapshot, { ...snapshot, maxTimeoutMs: 2_000, maxOutputBytes: 10, graceMs: 50 });
    expect(bound).toMatchObject({ maxTimeoutMs: 2_000, maxOutputBytes: 10, graceMs: 50, timeoutMs: 120_000 });
  });

  it('keeps the snapshot’s limit when the live one is raised', () => {
    const bound = boundConfig(snapshot, { ...snapshot, maxTimeoutMs: 900_000, maxJobsPerSession: 1_000 });
    expect(bound.maxTimeoutMs).toBe(600_000);
    expect(bound.maxJobsPerSession).toBe(snapshot.maxJobsPerSession);
  });

  it('turns background runs off at once, never back on for a session opened without them', () => {
    expect(boundConfig(snapshot, { ...snapshot, enableRunInBackground: false }).enableRunInBackground).toBe(false);
    const without = { ...snapshot, enableRunInBackground: false };
    expect(boundConfig(without, snapshot).enableRunInBackground).toBe(false);
  });

  it('keeps the snapshot’s defaults whatever the live ones say', () => {
    const live: Config = { ...snapshot, cwd: '/elsewhere', defaultSandboxMode: 'read-only' };
    const bound = boundConfig({ ...snapshot, cwd: '/here' }, live);
    expect(bound.cwd).toBe('/here');
    expect(bound.defaultSandboxMode).toBe(snapshot.defaultSandboxMode);
  });

  it('narrows every per-session field it lists, and changes neither input', () => {
    const live = { ...snapshot };
    for (const field of NARROWING_FIELDS) live[field] = 1;
    const frozen = Object.freeze({ ...snapshot });
    const bound = boundConfig(frozen, Object.freeze(live));
    for (const field of NARROWING_FIELDS) expect(bound[field], field).toBe(1);
    expect(frozen.maxTimeoutMs).toBe(600_000);
  });
});

describe('clampTimeout', () => {
  it('is the request’s timeout, else timeoutMs, capped by maxTimeoutMs', () => {
    const config = { timeoutMs: 1_000, maxTimeoutMs: 5_000 };
    expect(clampTimeout(undefined, config)).toBe(1_000);
    expect(clampTimeout(3_000, config)).toBe(3_000);
    expect(clampTimeout(1e12, config)).toBe(5_000);
    expect(clampTimeout(undefined, { timeoutMs: 9_000, maxTimeoutMs: 5_000 })).toBe(5_000);
  });
});
