/**
 * The library's types as a harness writes against them: `createShellTools` without `persistent`
 * gives the one-shot shell (its `details` narrow), with `persistent: true` the persistent one; an
 * `approveEscalation` written as a plain function needs no `as const`. Checked by the type checker
 * (`npx tsc -p tsconfig.test.json`); the test itself only asserts what the types say at run time.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import type {
  ApproveEscalation,
  createShellTools,
  EscalationRequest,
  ShellToolDetails,
} from '../../../client/index.js';
import type { PersistentShellTool } from '../../../client/tool/persistent-shell.js';
import type { ModelTool } from '../../../client/tool/types.js';

type Create = typeof createShellTools;

/** A harness's call without `persistent`, and one with it. */
const oneShot = (create: Create) => create({ client: undefined as never, session: { id: 's' } });
const persistent = (create: Create) => create({ client: undefined as never, session: { id: 's' }, persistent: true });

describe('the library types', () => {
  it('createShellTools narrows shell by persistent', () => {
    expectTypeOf(oneShot).returns.resolves.toHaveProperty('shell').toEqualTypeOf<ModelTool<ShellToolDetails>>();
    expectTypeOf(persistent).returns.resolves.toHaveProperty('shell').toEqualTypeOf<PersistentShellTool>();
    expect(typeof oneShot).toBe('function');
  });

  it('approveEscalation takes a function that returns its outcome as a plain string', () => {
    const approve = (request: EscalationRequest) =>
      Promise.resolve(request.justification.length > 0 ? 'approved' : 'rejected');
    expectTypeOf(approve).toExtend<ApproveEscalation>();
    expect(typeof approve).toBe('function');
  });
});
