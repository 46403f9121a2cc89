/**
 * How a background job's process is launched: the argv actually spawned and what the sandbox
 * reports. This is the seam the sandbox runner plugs into: it wraps the shell's argv, watches
 * stderr for denials, and tells a runner failure apart from the command's own exit, which settles
 * the job as `failed` with `sandbox.runnerFailed: true` instead of `completed`.
 */
import { ExecdError } from '../../protocol/errors.js';
import type { ExecSpec, SandboxReport } from '../../protocol/types.js';
import type { TerminateOptions } from '../processes/group-signals.js';
import type { ChildSpawner } from '../executor/spawner-client.js';
import { DenialScanner } from '../sandbox/denial.js';
import { confinedExit, type ExitFacts } from '../sandbox/exit-status.js';
import { runnerFailure, type RunOutcome } from '../sandbox/runner-failure.js';
import { sandboxReport, type Confinement } from '../sandbox/runner.js';

/** The launch of one job. */
export interface JobLaunchPlan {
  /** Exactly the argv spawned: the spec's, or a runner's wrapping of it. */
  argv: string[];
  /** The environment to spawn with in place of the spec's (the Landlock launcher's). */
  env?: Record<string, string>;
  /** Who spawns it in place of the daemon's spawner (a session's confined spawner); its streams are pipes. */
  spawner?: ChildSpawner;
  /** What the job's snapshot reports about the sandbox; `denied` turns true when a denial shows. */
  sandbox: SandboxReport;
  /** Set when no runner can enforce the mode: nothing is spawned, the job settles `failed` at once. */
  refused?: string;
  /** Sees every stderr chunk as it arrives (denial detection). */
  onStderr?: (chunk: Buffer) => void;
  /**
   * Set when a runner wraps the command. Called once the process ended: a reason when the runner
   * failed before the command ran, else undefined. A failed spawn of a runner is a runner failure.
   */
  runnerFailure?: (outcome: RunOutcome) => string | undefined;
  /** How the job's tree is killed (a runner leading the group is spared the SIGTERM). */
  terminate?: TerminateOptions;
  /** The exit facts of the ended process, given whether execd sent it SIGTERM (a runner's status convention). */
  exitFacts?: (exit: ExitFacts, termSent: boolean) => ExitFacts;
}

/**
 * The plan for a spec and its confinement (see `confine`): unconfined, wrapped by the runner, or
 * refused when the runner cannot enforce the mode — a job then fails; it never runs unconfined.
 */
export function planJobLaunch(spec: ExecSpec, confinement: Confinement | ExecdError | undefined): JobLaunchPlan {
  const { mode } = spec.sandboxPolicy;
  if (confinement instanceof ExecdError)
    return { argv: spec.argv, sandbox: { mode, denied: false }, refused: confinement.message };
  const sandbox = sandboxReport(mode, confinement, false);
  if (!confinement) return { argv: spec.argv, sandbox };
  const denials = new DenialScanner(confinement.denialSignatures);
  return {
    argv: confinement.argv,
    ...(confinement.env && { env: confinement.env }),
    ...(confinement.spawner && { spawner: confinement.spawner }),
    sandbox,
    onStderr: (chunk) => {
      denials.write(chunk);
      if (denials.denied) sandbox.denied = true;
    },
    runnerFailure,
    terminate: confinement.terminate,
    exitFacts: confinedExit,
  };
}
