/** Sandbox modes and policies (SPEC §6). */
import type { z } from 'zod';
import { absolutePath } from './fields.js';
import { lazySchema } from './zod.js';

/** The three file-sandbox modes, narrowest first. */
export const SANDBOX_MODES = ['read-only', 'workspace-write', 'danger-full-access'] as const;

/** The closed list of modes a tool call may ask to escalate to. */
export const ESCALATION_TARGETS = ['workspace-write', 'danger-full-access'] as const;

/** The schema of a sandbox mode (built on first use). */
export const sandboxModeSchema = lazySchema((z) =>
  z.enum(SANDBOX_MODES, { error: `must be one of ${SANDBOX_MODES.join(', ')}` }),
);

/** A sandbox mode. */
export type SandboxMode = z.infer<ReturnType<typeof sandboxModeSchema>>;

/** The schema of a sandbox policy: a mode and, for confined modes, the writable workspace root. */
export const sandboxPolicySchema = lazySchema((z) =>
  z.strictObject({
    mode: sandboxModeSchema(),
    workspaceRoot: absolutePath().optional(),
  }),
);

/** A sandbox policy. */
export type SandboxPolicy = z.infer<ReturnType<typeof sandboxPolicySchema>>;

/** The schema of a session's escalation targets: a subset of `ESCALATION_TARGETS`, no repeats. */
export const escalationTargetsSchema = lazySchema((z) =>
  z
    .array(z.enum(ESCALATION_TARGETS, { error: `must be one of ${ESCALATION_TARGETS.join(', ')}` }), {
      error: `must be an array of ${ESCALATION_TARGETS.join(', ')}`,
    })
    .refine((targets) => new Set(targets).size === targets.length, { error: 'must not repeat a mode' }),
);

/** An escalation target. */
export type EscalationTarget = (typeof ESCALATION_TARGETS)[number];

/**
 * The schema of a session's sandbox (`session/open`): a policy and the modes a request may widen
 * it to (SPEC §6; default none).
 */
export const sessionSandboxSchema = lazySchema((z) =>
  z.strictObject({
    mode: sandboxModeSchema(),
    workspaceRoot: absolutePath().optional(),
    escalationTargets: escalationTargetsSchema().optional(),
  }),
);

/** A session's sandbox as `session/open` names it. */
export type SessionSandbox = z.infer<ReturnType<typeof sessionSandboxSchema>>;

/** The schema of a `session/update`'s sandbox: every field optional, each only narrowing. */
export const sessionSandboxUpdateSchema = lazySchema((z) =>
  z.strictObject({
    mode: sandboxModeSchema().optional(),
    workspaceRoot: absolutePath().optional(),
    escalationTargets: escalationTargetsSchema().optional(),
  }),
);
