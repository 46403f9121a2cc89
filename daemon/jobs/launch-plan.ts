/**
 * How a background job's process is launched: the argv actually spawned and what the sandbox
 * reports. This is the seam a sandbox runner plugs into: it may wrap the shell's argv, and tell
 * a runner failure apart from the command's own exit, which settles the job as `failed` with
 * `sandbox.runnerFailed: true` instead of `completed`.
 */
import { ExecdError } from '../../protocol/errors.js';
import type { ExecSpec, SandboxReport } from '../../protocol/types.js';

/** How a process ended, as the runner's failure check sees it. */
export interface ProcessExit {
  exitCode: number | null;
  signal: string | null;
}

/** The launch of one job. */
export interface JobLaunchPlan {
  /** Exactly the argv spawned: the spec's, or a runner's wrapping of it. */
  argv: string[];
  /** What the job's snapshot reports about the sandbox. */
  sandbox?: SandboxReport;
  /**
   * Called once the process ended: a reason when the runner failed before the command ran
   * (the job then settles `failed` with `sandbox.runnerFailed: true`), else undefined.
   */
  runnerFailure?: (exit: ProcessExit, stderrTail: string) => string | undefined;
}

/** The plan for a spec; SANDBOX_UNAVAILABLE when its mode asks for confinement nothing enforces. */
export function planJobLaunch(spec: ExecSpec): JobLaunchPlan | ExecdError {
  const { mode } = spec.sandboxPolicy;
  if (mode !== 'danger-full-access') {
    return new ExecdError('SANDBOX_UNAVAILABLE', `no sandbox runner can enforce ${mode} on this machine`);
  }
  return { argv: spec.argv, sandbox: { mode, denied: false } };
}
