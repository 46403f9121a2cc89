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
