/**
 * A session's facts (docs/sessions.md, docs/sandbox.md): what a `session/open` snapshots, how a re-open compares with
 * them, and how `session/update` changes them — cwd and env replaced, the sandbox only narrowed.
 * Pure.
 */
import { ExecdError } from '../../protocol/errors.js';
import type { Config } from '../../protocol/config.js';
import type { SessionLimits } from '../../protocol/limits.js';
import type { EscalationTarget, NetworkPolicy, SandboxMode } from '../../protocol/sandbox.js';
import type { EnvMap } from '../runs/env.js';
import { describeLimits, sameLimits } from '../limits/resolve-limits.js';
import { checkNarrowing, type SessionSandboxFacts } from '../sandbox/escalation.js';

/** The facts a session runs with; fixed at open, changed only by `session/update`. */
export interface SessionFacts {
  cwd: string;
  env?: EnvMap;
  dshEnv?: EnvMap;
  sandbox: SessionSandboxFacts;
  /** Resource limits of its commands (docs/limits.md), resolved against the configuration at open. */
  limits?: SessionLimits;
}

/** The facts as `session/open` names them. */
export interface OpenFactsInput {
  cwd: string;
  env?: EnvMap;
  dshEnv?: EnvMap;
  sandbox?: {
    mode: SandboxMode;
    workspaceRoot?: string;
    network?: NetworkPolicy;
    escalationTargets?: EscalationTarget[];
  };
  /** Already resolved (`openLimits`): defaults applied, ceilings checked. */
  limits?: SessionLimits;
}

/** What `session/update` asks to change. */
export interface FactsUpdate {
  cwd?: string;
  env?: EnvMap;
  dshEnv?: EnvMap;
  sandbox?: {
    mode?: SandboxMode;
    workspaceRoot?: string;
    network?: NetworkPolicy;
    escalationTargets?: EscalationTarget[];
  };
  /** Already resolved (`lowerLimits`): the limits as they will stand. */
  limits?: SessionLimits;
}

const TARGET_ORDER: readonly EscalationTarget[] = ['workspace-write', 'danger-full-access'];

function sortedTargets(targets: readonly EscalationTarget[] = []): EscalationTarget[] {
  return TARGET_ORDER.filter((mode) => targets.includes(mode));
}

/**
 * The facts a `session/open` creates: an absent sandbox is the daemon's `defaultSandboxMode` of
 * this moment, and the workspace root is fixed now (the given one, else the cwd), so neither a
 * later `config/set` nor a new cwd moves what the session may write.
 */
export function openFacts(input: OpenFactsInput, config: Config): SessionFacts {
  return {
    cwd: input.cwd,
    env: input.env,
    dshEnv: input.dshEnv,
    sandbox: {
      mode: input.sandbox?.mode ?? config.defaultSandboxMode,
      workspaceRoot: input.sandbox?.workspaceRoot ?? input.cwd,
      escalationTargets: sortedTargets(input.sandbox?.escalationTargets),
      ...(input.sandbox?.network === 'off' && { network: 'off' as const }),
    },
    ...(input.limits && Object.keys(input.limits).length > 0 && { limits: input.limits }),
  };
}

function sameEnv(a: EnvMap | undefined, b: EnvMap | undefined): boolean {
  const left = Object.entries(a ?? {}).sort(([x], [y]) => (x < y ? -1 : 1));
  const right = Object.entries(b ?? {}).sort(([x], [y]) => (x < y ? -1 : 1));
  return JSON.stringify(left) === JSON.stringify(right);
}

/** The facts that differ, each as `name` or `name (has …, asked …)`; env values are never shown. */
export function differingFacts(current: SessionFacts, asked: SessionFacts): string[] {
  const out: string[] = [];
  const shown = (name: string, has: string, wants: string) => {
    if (has !== wants) out.push(`${name} (has ${has}, asked ${wants})`);
  };
  shown('cwd', current.cwd, asked.cwd);
  if (!sameEnv(current.env, asked.env)) out.push('env');
  if (!sameEnv(current.dshEnv, asked.dshEnv)) out.push('dshEnv');
  shown('sandbox.mode', current.sandbox.mode, asked.sandbox.mode);
  if (current.sandbox.mode !== 'danger-full-access' || asked.sandbox.mode !== 'danger-full-access') {
    shown('sandbox.workspaceRoot', current.sandbox.workspaceRoot, asked.sandbox.workspaceRoot);
  }
  shown('sandbox.network', current.sandbox.network ?? 'on', asked.sandbox.network ?? 'on');
  const list = (targets: EscalationTarget[]) => `[${targets.join(', ')}]`;
  shown('sandbox.escalationTargets', list(current.sandbox.escalationTargets), list(asked.sandbox.escalationTargets));
  if (!sameLimits(current.limits, asked.limits))
    shown('limits', describeLimits(current.limits), describeLimits(asked.limits));
  return out;
}

/** The refusal of a re-open whose facts differ from the session's. */
export function reopenRefusal(sessionId: string, differing: string[]): ExecdError {
  return new ExecdError(
    'FORBIDDEN',
    `session ${sessionId} is already open with other facts: ${differing.join('; ')}. ` +
      're-opening attaches unchanged: open it with only sessionId to attach, or change its facts with session/update',
  );
}

/** The facts after `update`, or FORBIDDEN when it would widen the sandbox or add an escalation target. */
export function updateFacts(current: SessionFacts, update: FactsUpdate, sessionId: string): SessionFacts | ExecdError {
  const sandbox: SessionSandboxFacts = {
    mode: update.sandbox?.mode ?? current.sandbox.mode,
    workspaceRoot: update.sandbox?.workspaceRoot ?? current.sandbox.workspaceRoot,
    escalationTargets:
      update.sandbox?.escalationTargets === undefined
        ? current.sandbox.escalationTargets
        : sortedTargets(update.sandbox.escalationTargets),
  };
  const network = update.sandbox?.network ?? current.sandbox.network;
  if (network === 'off') sandbox.network = 'off';
  const refused = checkNarrowing(current.sandbox, sandbox, sessionId);
  if (refused) return refused;
  return {
    cwd: update.cwd ?? current.cwd,
    env: update.env ?? current.env,
    dshEnv: update.dshEnv ?? current.dshEnv,
    sandbox,
    ...((update.limits ?? current.limits) && { limits: update.limits ?? current.limits }),
  };
}
