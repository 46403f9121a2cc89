/** Sandbox modes and policies (docs/sandbox.md). */
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

/** Whether a confined command may use the network: `off` refuses it (docs/sandbox-backends.md). */
export const NETWORK_POLICIES = ['on', 'off'] as const;

/** The schema of a network policy (built on first use). */
export const networkPolicySchema = lazySchema((z) =>
  z.enum(NETWORK_POLICIES, { error: `must be one of ${NETWORK_POLICIES.join(', ')}` }),
);

/** A network policy. */
export type NetworkPolicy = (typeof NETWORK_POLICIES)[number];

/**
 * The schema of a sandbox policy: a mode, for confined modes the writable workspace root, and
 * whether the network stays on (default `on`).
 */
export const sandboxPolicySchema = lazySchema((z) =>
  z.strictObject({
    mode: sandboxModeSchema(),
    workspaceRoot: absolutePath().optional(),
    network: networkPolicySchema().optional(),
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
 * it to (docs/sandbox.md; default none).
 */
export const sessionSandboxSchema = lazySchema((z) =>
  z.strictObject({
    mode: sandboxModeSchema(),
    workspaceRoot: absolutePath().optional(),
    network: networkPolicySchema().optional(),
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
    network: networkPolicySchema().optional(),
    escalationTargets: escalationTargetsSchema().optional(),
  }),
);
/** The sandbox runners execd has (docs/sandbox-backends.md). */
export const SANDBOX_BACKENDS = ['bwrap', 'landlock'] as const;

/** A sandbox runner. */
export type SandboxBackend = (typeof SANDBOX_BACKENDS)[number];

/** The `sandboxBackend` config choices: `auto` probes bubblewrap and falls back to Landlock. */
export const SANDBOX_BACKEND_CHOICES = ['auto', ...SANDBOX_BACKENDS] as const;

/** The schema of the `sandboxBackend` config field (built on first use). */
export const sandboxBackendChoiceSchema = lazySchema((z) =>
  z.enum(SANDBOX_BACKEND_CHOICES, { error: `must be one of ${SANDBOX_BACKEND_CHOICES.join(', ')}` }),
);

/**
 * What a backend enforces, each a claim its tests check: `files` (writes only where the mode
 * allows), `daemon-files` (the token, state dir and other sessions' spill files unreadable),
 * `daemon-socket` (the daemon's socket cannot even be connected to), `processes` (other
 * processes invisible), `network-off` (a policy's `network: 'off'` is honoured), `signals` (no
 * signal reaches a process outside the sandbox).
 */
export const SANDBOX_GUARANTEES = [
  'files',
  'daemon-files',
  'daemon-socket',
  'processes',
  'network-off',
  'signals',
] as const;

/** One claim of a backend. */
export type SandboxGuarantee = (typeof SANDBOX_GUARANTEES)[number];

/** The backend a daemon confines with, as `initialize` and `daemon/status` report it. */
export interface SandboxBackendInfo {
  /** The runner in use; null when none works here (confined modes then fail closed). */
  backend: SandboxBackend | null;
  /** What it enforces; empty without a runner. */
  enforces: SandboxGuarantee[];
  /** The kernel's Landlock ABI version when the Landlock runner is in use. */
  landlockAbi?: number;
  /** Why no runner works (each probed runner's reason); absent when one does. */
  unavailable?: string;
}
