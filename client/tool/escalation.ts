/**
 * The tool side of sandbox escalation (docs/library.md, docs/sandbox.md): which wider modes a call may ask for, and
 * the approval the harness must give before anything runs under one of them.
 */
import {
  ESCALATION_TARGETS,
  SANDBOX_MODES,
  type EscalationTarget,
  type SandboxMode,
  type SandboxPolicy,
  type SessionSandbox,
} from '../../protocol/sandbox.js';

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
 * The outcome of an approval: `'approved'` (or `true`), `'rejected'` (or `false`), `'cancelled'`.
 * The approval seam's own words are accepted too: `'allowed-once'` approves, `'unavailable'` (no
 * approval channel could ask anyone) refuses.
 */
export type EscalationOutcome = 'approved' | 'rejected' | 'cancelled' | 'allowed-once' | 'unavailable';

/**
 * Decides an escalation: an explicit approval runs under the wider mode; a refusal, a
 * cancellation (nobody decided, e.g. the prompt was dismissed) or an unavailable channel runs
 * nothing. Any other value is a programming error of the harness and runs nothing either. The
 * signal is the tool call's: an aborted call needs no answer.
 */
export type ApproveEscalation = (
  request: EscalationRequest,
  options: { signal?: AbortSignal },
) => EscalationAnswer | Promise<EscalationAnswer>;

/**
 * What an approval callback answers. Any string is accepted by the type, so that a callback that
 * returns `'approved'` from a plain function (typed `string`) needs no `as const`; at run time only
 * `true` and the outcomes above count (anything else runs nothing, see `decideEscalation`).
 */
// `string & {}` keeps the outcomes offered as completions while any string type-checks.
export type EscalationAnswer = boolean | EscalationOutcome | (string & {});

/** What a callback's answer means: only an explicit approval approves (fail closed). */
export type EscalationDecision =
  { kind: 'approved' | 'rejected' | 'cancelled' | 'unavailable' } | { kind: 'invalid'; value: unknown };

/** Reads a callback's answer; anything but `true`, `false` or a known outcome is `invalid`. */
export function decideEscalation(value: unknown): EscalationDecision {
  if (value === true || value === 'approved' || value === 'allowed-once') return { kind: 'approved' };
  if (value === false || value === 'rejected') return { kind: 'rejected' };
  if (value === 'cancelled' || value === 'unavailable') return { kind: value };
  return { kind: 'invalid', value };
}

/** A value as a message shows it: JSON when it has one, else its type (`undefined`, a function…). */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (typeof value === 'function' || typeof value === 'symbol' || typeof value === 'bigint') return String(value);
  try {
    // Its type says string, but a value whose toJSON gives undefined stringifies to undefined.
    const json = JSON.stringify(value) as string | undefined;
    return json ?? Object.prototype.toString.call(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/** True when a policy confines the command (anything but `danger-full-access`). */
export function sandboxInForce(policy: SandboxPolicy | undefined): policy is SandboxPolicy {
  return policy !== undefined && policy.mode !== 'danger-full-access';
}

/** The escalation targets wider than `mode`, narrowest first. */
export function widerTargets(mode: SandboxMode): SandboxMode[] {
  const rank = SANDBOX_MODES.indexOf(mode);
  return ESCALATION_TARGETS.filter((target) => SANDBOX_MODES.indexOf(target) > rank);
}

/**
 * The escalation targets the tools declare when they open the session: the harness's own list,
 * else every wider mode when an approval callback is given (the tool then asks before each), else
 * none — so without a callback nothing can widen the session, whoever sends the request.
 */
export function declaredTargets(
  sandbox: SessionSandbox | undefined,
  approve: ApproveEscalation | undefined,
): EscalationTarget[] | undefined {
  if (sandbox === undefined) return undefined;
  if (sandbox.escalationTargets !== undefined) return sandbox.escalationTargets;
  return approve === undefined ? [] : (widerTargets(sandbox.mode) as EscalationTarget[]);
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

/** What the model reads when the approval was cancelled before anyone decided: nothing ran. */
export function cancelledEscalationText(target: SandboxMode): string {
  return `[sandbox: escalation to ${target} was cancelled before it was decided; the command did not run]`;
}

/** What the model reads when no approval channel could ask anyone: nothing ran. */
export function unavailableEscalationText(target: SandboxMode): string {
  return `[sandbox: escalation to ${target} could not be approved: no approval channel is available; the command did not run]`;
}

/** The error text when the approval callback answered something that is not an outcome: nothing ran. */
export function invalidApprovalText(value: unknown): string {
  return (
    `sandbox escalation failed: approveEscalation returned ${describeValue(value)}; expected 'approved', ` +
    `'rejected', 'cancelled', true or false (or 'allowed-once', 'unavailable'). The command did not run`
  );
}

/** The error text when the approval callback threw or rejected: nothing ran. */
export function failedApprovalText(cause: unknown): string {
  const reason = cause instanceof Error ? cause.message : describeValue(cause);
  return `sandbox escalation failed: approveEscalation threw: ${reason}. The command did not run`;
}
