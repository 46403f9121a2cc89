/** Escalation targets: the closed list, wider modes only, the policy of an approved call. */
import { describe, expect, it } from 'vitest';
import {
  checkEscalationTarget,
  escalatedPolicy,
  sandboxInForce,
  widerTargets,
} from '../../../client/tool/escalation.js';
import { ESCALATION_TARGETS } from '../../../protocol/sandbox.js';

describe('escalation', () => {
  it('offers the closed list, wider than the current mode only', () => {
    expect(ESCALATION_TARGETS).toEqual(['workspace-write', 'danger-full-access']);
    expect(widerTargets('read-only')).toEqual(['workspace-write', 'danger-full-access']);
    expect(widerTargets('workspace-write')).toEqual(['danger-full-access']);
    expect(widerTargets('danger-full-access')).toEqual([]);
  });

  it('refuses a target that is not wider', () => {
    expect(checkEscalationTarget('danger-full-access', 'workspace-write')).toBeUndefined();
    expect(checkEscalationTarget('workspace-write', 'workspace-write')).toBe(
      `invalid sandbox_permissions: "workspace-write" is not wider than the session's sandbox mode (workspace-write)`,
    );
  });

  it('keeps the workspace root in the escalated policy', () => {
    expect(escalatedPolicy({ mode: 'read-only', workspaceRoot: '/ws' }, 'workspace-write')).toEqual({
      mode: 'workspace-write',
      workspaceRoot: '/ws',
    });
    expect(escalatedPolicy({ mode: 'read-only' }, 'danger-full-access')).toEqual({ mode: 'danger-full-access' });
  });

  it('counts only confined modes as a sandbox in force', () => {
    expect(sandboxInForce(undefined)).toBe(false);
    expect(sandboxInForce({ mode: 'danger-full-access' })).toBe(false);
    expect(sandboxInForce({ mode: 'read-only' })).toBe(true);
  });
});
