/** Result values for tests of the rendering and the tool layer. */
import type { ShellRunResult } from '../../protocol/types.js';

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
