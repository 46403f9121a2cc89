/**
 * Escalation approval fails closed: only an explicit approval (`true` or `'approved'`) runs the
 * command under the wider mode; every other answer — a refusal, a cancellation, a value that is no
 * outcome, a callback that throws — runs nothing, each with its own text.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decideEscalation } from '../../../client/tool/escalation.js';
import { createShellTools, type ApproveEscalation } from '../../../client/tool/index.js';
import { startDaemon } from '../../helpers/daemon.js';

describe('decideEscalation', () => {
  it('approves only true and "approved"', () => {
    expect(decideEscalation(true)).toEqual({ kind: 'approved' });
    expect(decideEscalation('approved')).toEqual({ kind: 'approved' });
    expect(decideEscalation(false)).toEqual({ kind: 'rejected' });
    expect(decideEscalation('rejected')).toEqual({ kind: 'rejected' });
    expect(decideEscalation('cancelled')).toEqual({ kind: 'cancelled' });
    expect(decideEscalation('allowed-once')).toEqual({ kind: 'approved' });
    expect(decideEscalation('unavailable')).toEqual({ kind: 'unavailable' });
    for (const value of ['rogue', 'APPROVED', 1, 'yes', {}, [], null, undefined]) {
      expect(decideEscalation(value)).toEqual({ kind: 'invalid', value });
    }
  });
});

describe('escalation answers through a real daemon', () => {
  it('runs the command only on an explicit approval; every other answer runs nothing', async () => {
    const daemon = await startDaemon();
    const workspace = join(daemon.dir, 'ws');
    const outside = join(daemon.dir, 'outside');
    mkdirSync(workspace);
    mkdirSync(outside);
    let answer: () => unknown = () => true;
    const tools = await createShellTools({
      client: await daemon.connect(),
      session: { id: 's1', cwd: workspace, sandbox: { mode: 'workspace-write', workspaceRoot: workspace } },
      approveEscalation: (() => answer()) as ApproveEscalation,
    });
    let n = 0;
    async function attempt(respond: () => unknown) {
      answer = respond;
      const marker = join(outside, `escaped-${++n}`);
      const result = await tools.shell.execute({
        command: `touch ${marker} && echo written`,
        description: 'Write outside the workspace',
        sandbox_permissions: 'danger-full-access',
        justification: 'The build writes its cache there',
      });
      return { result, ran: existsSync(marker) };
    }

    const notApproved = '[sandbox: escalation to danger-full-access was not approved; the command did not run]';
    for (const refusal of [false, 'rejected']) {
      expect(await attempt(() => refusal)).toEqual({
        ran: false,
        result: {
          text: notApproved,
          isError: true,
          details: { kind: 'rejected', requestedMode: 'danger-full-access', outcome: 'rejected' },
        },
      });
    }
    expect(await attempt(() => Promise.resolve('cancelled'))).toEqual({
      ran: false,
      result: {
        text: '[sandbox: escalation to danger-full-access was cancelled before it was decided; the command did not run]',
        isError: true,
        details: { kind: 'rejected', requestedMode: 'danger-full-access', outcome: 'cancelled' },
      },
    });

    expect(await attempt(() => 'unavailable')).toEqual({
      ran: false,
      result: {
        text: '[sandbox: escalation to danger-full-access could not be approved: no approval channel is available; the command did not run]',
        isError: true,
        details: { kind: 'rejected', requestedMode: 'danger-full-access', outcome: 'unavailable' },
      },
    });

    const invalid: Array<[unknown, string]> = [
      ['rogue', '"rogue"'],
      [1, '1'],
      [{ approved: true }, '{"approved":true}'],
      [undefined, 'undefined'],
      [null, 'null'],
    ];
    for (const [value, shown] of invalid) {
      const message =
        `sandbox escalation failed: approveEscalation returned ${shown}; expected 'approved', 'rejected', ` +
        `'cancelled', true or false (or 'allowed-once', 'unavailable'). The command did not run`;
      expect(await attempt(() => value)).toEqual({
        ran: false,
        result: { text: message, isError: true, details: { kind: 'error', errorName: 'ESCALATION_APPROVAL', message } },
      });
    }

    const thrown = await attempt(() => {
      throw new Error('the approval dialog crashed');
    });
    expect(thrown.ran).toBe(false);
    expect(thrown.result).toMatchObject({
      isError: true,
      text: 'sandbox escalation failed: approveEscalation threw: the approval dialog crashed. The command did not run',
      details: { kind: 'error', errorName: 'ESCALATION_APPROVAL' },
    });
    const rejectedPromise = await attempt(() => Promise.reject(new Error('user store offline')));
    expect(rejectedPromise.ran).toBe(false);
    expect(rejectedPromise.result.text).toBe(
      'sandbox escalation failed: approveEscalation threw: user store offline. The command did not run',
    );

    for (const approval of [true, 'approved', 'allowed-once']) {
      const approved = await attempt(() => approval);
      expect(approved.ran).toBe(true);
      expect(approved.result).toMatchObject({ text: 'written\n', isError: false });
      expect(approved.result.details).toMatchObject({
        kind: 'run',
        result: { sandbox: { mode: 'danger-full-access', denied: false } },
      });
    }
  });

  it('an approval callback that throws after the call was aborted raises the abort error', async () => {
    const daemon = await startDaemon();
    const workspace = join(daemon.dir, 'ws');
    mkdirSync(workspace);
    const controller = new AbortController();
    const tools = await createShellTools({
      client: await daemon.connect(),
      session: { id: 's1', cwd: workspace, sandbox: { mode: 'read-only' } },
      approveEscalation: () => {
        controller.abort();
        throw new Error('dialog closed');
      },
    });
    await expect(
      tools.shell.execute(
        {
          command: 'true',
          description: 'Do nothing',
          sandbox_permissions: 'workspace-write',
          justification: 'Needs to write',
        },
        { signal: controller.signal },
      ),
    ).rejects.toMatchObject({ name: 'AbortError' });
  });
});
