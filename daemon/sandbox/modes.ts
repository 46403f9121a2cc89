/** Which sandbox modes confine a command, and which a machine can enforce. */
import type { SandboxMode } from '../../protocol/sandbox.js';

/** A mode that needs a runner. */
export type ConfinedMode = Exclude<SandboxMode, 'danger-full-access'>;

/** The modes a working runner enforces. */
export const CONFINED_MODES: readonly ConfinedMode[] = ['read-only', 'workspace-write'];

/** True for the modes that need a runner. */
export function isConfined(mode: SandboxMode): mode is ConfinedMode {
  return mode !== 'danger-full-access';
}

/** The modes to advertise: `danger-full-access` always, the confined ones only with a working runner. */
export function enforceableModes(runnerWorks: boolean): SandboxMode[] {
  return runnerWorks ? [...CONFINED_MODES, 'danger-full-access'] : ['danger-full-access'];
}
