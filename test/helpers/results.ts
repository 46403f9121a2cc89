/** Result values for tests of the rendering and the tool layer. */
import type { JobSnapshot, ShellRunResult } from '../../protocol/types.js';

/** A foreground result: exit 0, no output, unless overridden. */
export function runResult(overrides: Partial<ShellRunResult> = {}): ShellRunResult {
  return {
    exitCode: 0,
    signal: null,
    timedOut: false,
    aborted: false,
    timeoutMs: 120000,
    durationMs: 5,
    pid: 42,
    stdout: { text: '', truncated: false },
    stderr: { text: '', truncated: false },
    ...overrides,
  };
}

/** A running job's snapshot, unless overridden. */
export function jobSnapshot(overrides: Partial<JobSnapshot> = {}): JobSnapshot {
  return {
    id: 'bash-3',
    kind: 'bash',
    label: 'make test',
    ownerSession: 's1',
    status: 'running',
    pid: 99,
    exitCode: null,
    signal: null,
    startedAt: '2026-01-01T00:00:00.000Z',
    reported: false,
    stdoutBytes: 0,
    stderrBytes: 0,
    ...overrides,
  };
}
