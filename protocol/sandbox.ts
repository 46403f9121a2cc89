/** Sandbox modes and policies (SPEC §6). */
import { z } from 'zod';
import { absolutePath } from './fields.js';

/** The three file-sandbox modes, narrowest first. */
export const SANDBOX_MODES = ['read-only', 'workspace-write', 'danger-full-access'] as const;

/** The closed list of modes a tool call may ask to escalate to. */
export const ESCALATION_TARGETS = ['workspace-write', 'danger-full-access'] as const;

/** A sandbox mode. */
export const SandboxModeSchema = z.enum(SANDBOX_MODES, {
  error: `must be one of ${SANDBOX_MODES.join(', ')}`,
});

/** A sandbox mode. */
export type SandboxMode = z.infer<typeof SandboxModeSchema>;

/** A sandbox policy: a mode and, for confined modes, the writable workspace root. */
export const SandboxPolicySchema = z.strictObject({
  mode: SandboxModeSchema,
  workspaceRoot: absolutePath().optional(),
});

/** A sandbox policy. */
export type SandboxPolicy = z.infer<typeof SandboxPolicySchema>;
