/**
 * The tool side of sandbox escalation (SPEC §3.1, §6): which wider modes a call may ask for, and
 * the approval the harness must give before anything runs under one of them.
 */
import { ESCALATION_TARGETS, SANDBOX_MODES, type SandboxMode, type SandboxPolicy } from '../../protocol/sandbox.js';

/** What the harness is asked to approve. */
export interface EscalationRequest {
  sessionId: string;
  command: string;
  /** The resolved working directory (absolute when the session cwd is known). */
  workdir: string | undefined;
  /** The mode the session runs under. */
  currentMode: SandboxMode;
  /** The wider mode asked for, one of `ESCALATION_TARGETS`. */
  requestedMode: SandboxMode;
  /** The model's reason, shown to whoever approves. */
  justification: string;
  background: boolean;
}

/**
 * Decides an escalation: resolve true to run under the wider mode, false to run nothing. The
 * signal is the tool call's: an aborted call needs no answer.
 */
export type ApproveEscalation = (
  request: EscalationRequest,
  options: { signal?: AbortSignal },
) => boolean | Promise<boolean>;

/** True when a policy confines the command (anything but `danger-full-access`). */
export function sandboxInForce(policy: SandboxPolicy | undefined): policy is SandboxPolicy {
  return policy !== undefined && policy.mode !== 'danger-full-access';
}

/** The escalation targets wider than `mode`, narrowest first. */
export function widerTargets(mode: SandboxMode): SandboxMode[] {
  const rank = SANDBOX_MODES.indexOf(mode);
  return ESCALATION_TARGETS.filter((target) => SANDBOX_MODES.indexOf(target) > rank);
}

/** The message refusing a target that is not wider than the current mode, if it is not. */
export function checkEscalationTarget(target: SandboxMode, current: SandboxMode): string | undefined {
  if (widerTargets(current).includes(target)) return undefined;
  return `invalid sandbox_permissions: ${JSON.stringify(target)} is not wider than the session's sandbox mode (${current})`;
}

/** The policy an approved call runs under: the wider mode, the same workspace root. */
export function escalatedPolicy(policy: SandboxPolicy, target: SandboxMode): SandboxPolicy {
  return policy.workspaceRoot === undefined ? { mode: target } : { mode: target, workspaceRoot: policy.workspaceRoot };
}

/** What the model reads when the approval was refused: nothing ran. */
export function rejectedEscalationText(target: SandboxMode): string {
  return `[sandbox: escalation to ${target} was not approved; the command did not run]`;
}
