/**
 * What a request's `sandboxPolicy` may ask of its session (docs/sandbox.md): it may always narrow the
 * session's confinement, and widen it only to a mode the session's opener listed in
 * `escalationTargets`. Pure.
 */
import { isAbsolute, relative, resolve } from 'node:path';
import { ExecdError } from '../../protocol/errors.js';
import type { EscalationTarget, NetworkPolicy, SandboxMode, SandboxPolicy } from '../../protocol/sandbox.js';

/** A session's sandbox as it stands: a mode, its workspace root (fixed at open) and its targets. */
export interface SessionSandboxFacts {
  mode: SandboxMode;
  /** The writable root of `workspace-write` (and of a `workspace-write` escalation); fixed at open. */
  workspaceRoot: string;
  escalationTargets: EscalationTarget[];
  /** `off` when the session's commands have no network (docs/sandbox-backends.md); absent: on. */
  network?: NetworkPolicy;
}

/** True when `inner` is `outer` or a path below it. */
export function pathWithin(inner: string, outer: string): boolean {
  const rel = relative(resolve(outer), resolve(inner));
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/**
 * True when `policy` lets a command write nowhere `bound` does not: full access is within full
 * access only; read-only within anything; workspace-write within a workspace-write whose root
 * holds its root, and within full access. A policy without a root writes `defaultRoot`.
 */
export function policyWithin(policy: SandboxPolicy, bound: SandboxPolicy, defaultRoot: string): boolean {
  if (bound.mode === 'danger-full-access') return true;
  if (policy.mode === 'read-only') return true;
  if (policy.mode === 'danger-full-access' || bound.mode === 'read-only') return false;
  return pathWithin(policy.workspaceRoot ?? defaultRoot, bound.workspaceRoot ?? defaultRoot);
}

/** The policies a session allows: its own and one per escalation target. */
function allowedPolicies(session: SessionSandboxFacts): SandboxPolicy[] {
  const own: SandboxPolicy = { mode: session.mode, workspaceRoot: session.workspaceRoot };
  return [own, ...session.escalationTargets.map((mode) => ({ mode, workspaceRoot: session.workspaceRoot }))];
}

/** A mode with its root, for messages. */
function describePolicy(policy: SandboxPolicy): string {
  return policy.mode === 'workspace-write' && policy.workspaceRoot !== undefined
    ? `workspace-write (root ${policy.workspaceRoot})`
    : policy.mode;
}

/**
 * Undefined when the request's policy is within the session's sandbox or one of its escalation
 * targets; else FORBIDDEN naming the session's mode and the mode asked for.
 */
export function checkRequestedPolicy(
  requested: SandboxPolicy | undefined,
  sessionId: string,
  session: SessionSandboxFacts,
): ExecdError | undefined {
  if (requested === undefined) return undefined;
  if (session.network === 'off' && requested.network === 'on') {
    return new ExecdError(
      'FORBIDDEN',
      `sandboxPolicy.network: session ${sessionId} runs with the network off; a request may not turn it on`,
    );
  }
  const root = session.workspaceRoot;
  if (allowedPolicies(session).some((bound) => policyWithin(requested, bound, root))) return undefined;
  const targets = session.escalationTargets.length > 0 ? session.escalationTargets.join(', ') : 'none';
  return new ExecdError(
    'FORBIDDEN',
    `sandboxPolicy: session ${sessionId} runs ${describePolicy({ mode: session.mode, workspaceRoot: root })} ` +
      `and may escalate to: ${targets}; a request may not widen it to ${describePolicy({ ...requested, workspaceRoot: requested.workspaceRoot ?? root })}`,
  );
}

/**
 * Undefined when `next` narrows (or keeps) `current` — its policy within the current one, its
 * targets a subset; else FORBIDDEN naming what would widen.
 */
export function checkNarrowing(
  current: SessionSandboxFacts,
  next: SessionSandboxFacts,
  sessionId: string,
): ExecdError | undefined {
  const within = policyWithin(
    { mode: next.mode, workspaceRoot: next.workspaceRoot },
    { mode: current.mode, workspaceRoot: current.workspaceRoot },
    current.workspaceRoot,
  );
  // The root is also where a workspace-write escalation writes: it may only move inward.
  const rootWithin = current.mode === 'danger-full-access' || pathWithin(next.workspaceRoot, current.workspaceRoot);
  if (!within || !rootWithin) {
    return new ExecdError(
      'FORBIDDEN',
      `sandbox: session ${sessionId} runs ${describePolicy(current)}; session/update may only narrow it, not widen it to ${describePolicy(next)}`,
    );
  }
  if (current.network === 'off' && next.network !== 'off') {
    return new ExecdError(
      'FORBIDDEN',
      `sandbox.network: session ${sessionId} runs with the network off; session/update may not turn it on`,
    );
  }
  const added = next.escalationTargets.filter((mode) => !current.escalationTargets.includes(mode));
  if (added.length > 0) {
    return new ExecdError(
      'FORBIDDEN',
      `sandbox.escalationTargets: session ${sessionId} may escalate to ${current.escalationTargets.join(', ') || 'none'}; session/update may not add ${added.join(', ')}`,
    );
  }
  return undefined;
}
