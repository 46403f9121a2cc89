/**
 * A session's facts over the real protocol (SPEC §6): a re-open attaches unchanged or is refused
 * naming what differs; `session/update` replaces cwd and env and only narrows the sandbox; a
 * request widens only to a declared escalation target (issues 26.1, 27.8).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ExecdClient } from '../../client/connection.js';
import { SessionOpen, SessionUpdate, ShellStart, TerminalOpen } from '../../protocol/methods.js';
import { rejection } from '../helpers/rejection.js';
import { startDaemon } from '../helpers/daemon.js';

async function world() {
  const daemon = await startDaemon();
  const workspace = join(daemon.dir, 'ws');
  const other = join(daemon.dir, 'other');
  mkdirSync(workspace);
  mkdirSync(other);
  const agent = await daemon.connect();
  await agent.call(SessionOpen, {
    sessionId: 'agent',
    cwd: workspace,
    env: { AGENT_VAR: 'a' },
    sandbox: { mode: 'workspace-write' },
  });
  return { daemon, workspace, other, agent };
}

const write = (
  client: ExecdClient,
  command: string,
  sandboxPolicy?: { mode: 'read-only' | 'workspace-write' | 'danger-full-access'; workspaceRoot?: string },
) => client.run({ sessionId: 'agent', command, sandboxPolicy });

describe('re-opening a session', { timeout: 120_000 }, () => {
  it('with the same facts, or none, attaches unchanged', async () => {
    const { daemon, workspace } = await world();
    const again = await daemon.connect();
    const same = await again.call(SessionOpen, {
      sessionId: 'agent',
      cwd: workspace,
      env: { AGENT_VAR: 'a' },
      sandbox: { mode: 'workspace-write', workspaceRoot: workspace, escalationTargets: [] },
    });
    expect(same.reattached).toBe(true);
    const bare = await daemon.connect();
    expect((await bare.call(SessionOpen, { sessionId: 'agent' })).reattached).toBe(true);
    const run = await bare.run({ sessionId: 'agent', command: 'pwd; echo $AGENT_VAR; touch /etc/x-execd' });
    expect(run.stdout.text).toBe(`${workspace}\na\n`);
    expect(run.sandbox).toMatchObject({ mode: 'workspace-write', denied: true });
  });

  it('with other facts is FORBIDDEN naming each, and changes nothing', async () => {
    const { daemon, workspace, other, agent } = await world();
    const intruder = await daemon.connect();
    const refused = await rejection(
      intruder.call(SessionOpen, {
        sessionId: 'agent',
        cwd: other,
        env: { PATH: '/shim' },
        sandbox: { mode: 'danger-full-access', escalationTargets: ['danger-full-access'] },
      }),
    );
    console.log(refused.message);
    expect(refused.errorName).toBe('FORBIDDEN');
    expect(refused.message).toContain(`cwd (has ${workspace}, asked ${other})`);
    expect(refused.message).toContain('env');
    expect(refused.message).toContain('sandbox.mode (has workspace-write, asked danger-full-access)');
    expect(refused.message).toContain('sandbox.escalationTargets (has [], asked [danger-full-access])');
    expect(refused.message).not.toContain('/shim');
    // The refused connection did not get the session, and the agent's facts hold.
    expect((await rejection(intruder.run({ sessionId: 'agent', command: 'true' }))).errorName).toBe(
      'SESSION_NOT_FOUND',
    );
    const run = await write(agent, `pwd; touch ${other}/escaped /etc/x-execd`);
    expect(run.stdout.text).toBe(`${workspace}\n`);
    expect(run.sandbox?.denied).toBe(true);
  });

  it('of a session that does not exist, without facts, is SESSION_NOT_FOUND and creates nothing', async () => {
    const daemon = await startDaemon();
    const client = await daemon.connect();
    const refused = await rejection(client.call(SessionOpen, { sessionId: 'ghost' }));
    expect(refused.errorName).toBe('SESSION_NOT_FOUND');
    expect(refused.message).toContain('open it with a cwd');
    const env = await rejection(client.call(SessionOpen, { sessionId: 'ghost', env: { A: '1' } }));
    expect(env.errorName).toBe('INVALID_PARAMS');
    expect(env.message).toContain('cwd must be given when env, dshEnv or sandbox are');
  });
});

describe('session/update', { timeout: 120_000 }, () => {
  it('replaces cwd and env, and narrows the sandbox', async () => {
    const { workspace, agent } = await world();
    const sub = join(workspace, 'sub');
    mkdirSync(sub);
    const updated = await agent.call(SessionUpdate, {
      sessionId: 'agent',
      cwd: sub,
      env: { AGENT_VAR: 'b' },
      sandbox: { workspaceRoot: sub },
    });
    expect(updated).toEqual({
      sessionId: 'agent',
      cwd: sub,
      envNames: ['AGENT_VAR'],
      sandbox: { mode: 'workspace-write', workspaceRoot: sub, escalationTargets: [] },
    });
    const run = await write(agent, `pwd; echo $AGENT_VAR; touch ${workspace}/above /etc/x-execd here`);
    expect(run.stdout.text).toBe(`${sub}\nb\n`);
    expect(run.sandbox?.denied).toBe(true);
    expect(existsSync(join(workspace, 'above'))).toBe(false);
    expect(existsSync(join(sub, 'here'))).toBe(true);
    await agent.call(SessionUpdate, { sessionId: 'agent', sandbox: { mode: 'read-only' } });
    expect((await write(agent, 'touch again')).sandbox).toMatchObject({ mode: 'read-only', denied: true });
  });

  it('refuses to widen the mode, move the root outward or add an escalation target', async () => {
    const { daemon, workspace, agent } = await world();
    const wider = await rejection(
      agent.call(SessionUpdate, { sessionId: 'agent', sandbox: { mode: 'danger-full-access' } }),
    );
    expect(wider.errorName).toBe('FORBIDDEN');
    expect(wider.message).toContain('may only narrow it, not widen it to danger-full-access');
    const outward = await rejection(
      agent.call(SessionUpdate, { sessionId: 'agent', sandbox: { workspaceRoot: daemon.dir } }),
    );
    expect(outward.errorName).toBe('FORBIDDEN');
    const target = await rejection(
      agent.call(SessionUpdate, { sessionId: 'agent', sandbox: { escalationTargets: ['danger-full-access'] } }),
    );
    expect(target.message).toContain('may not add danger-full-access');
    // Nothing changed.
    const run = await write(agent, 'pwd; touch /etc/x-execd');
    expect(run.stdout.text).toBe(`${workspace}\n`);
    expect(run.sandbox).toMatchObject({ mode: 'workspace-write', denied: true });
  });
});

describe('escalation targets', { timeout: 120_000 }, () => {
  it('without targets a request may narrow but never widen, on every way in', async () => {
    const { daemon, workspace, agent } = await world();
    expect((await write(agent, 'touch x', { mode: 'read-only' })).sandbox).toMatchObject({
      mode: 'read-only',
      denied: true,
    });
    const wide = await rejection(write(agent, `touch ${daemon.dir}/escaped`, { mode: 'danger-full-access' }));
    console.log(wide.message);
    expect(wide.errorName).toBe('FORBIDDEN');
    expect(wide.message).toContain('runs workspace-write');
    expect(wide.message).toContain('may escalate to: none');
    expect(wide.message).toContain('may not widen it to danger-full-access');
    const root = await rejection(write(agent, 'true', { mode: 'workspace-write', workspaceRoot: daemon.dir }));
    expect(root.errorName).toBe('FORBIDDEN');
    const job = await rejection(
      agent.call(ShellStart, { sessionId: 'agent', command: 'true', sandboxPolicy: { mode: 'danger-full-access' } }),
    );
    expect(job.errorName).toBe('FORBIDDEN');
    const terminal = await rejection(
      agent.call(TerminalOpen, { sessionId: 'agent', sandboxPolicy: { mode: 'danger-full-access' } }),
    );
    expect(terminal.errorName).toBe('FORBIDDEN');
    expect(existsSync(join(daemon.dir, 'escaped'))).toBe(false);
    expect(existsSync(join(workspace, 'x'))).toBe(false);
  });

  it('a declared target may be asked for; one not declared stays FORBIDDEN', async () => {
    const daemon = await startDaemon();
    const workspace = join(daemon.dir, 'ws');
    mkdirSync(workspace);
    const client = await daemon.connect();
    await client.call(SessionOpen, {
      sessionId: 'agent',
      cwd: workspace,
      sandbox: { mode: 'read-only', escalationTargets: ['workspace-write'] },
    });
    const widened = await write(client, 'touch made', { mode: 'workspace-write' });
    expect(widened.sandbox).toMatchObject({ mode: 'workspace-write', denied: false });
    expect(existsSync(join(workspace, 'made'))).toBe(true);
    const full = await rejection(write(client, 'true', { mode: 'danger-full-access' }));
    expect(full.message).toContain('session agent runs read-only and may escalate to: workspace-write');
  });
});

describe("a session's network policy", { timeout: 120_000 }, () => {
  it('is one of its facts: a request or session/update may turn it off, never back on', async () => {
    const daemon = await startDaemon();
    const workspace = join(daemon.dir, 'ws');
    mkdirSync(workspace);
    const client = await daemon.connect();
    await client.call(SessionOpen, {
      sessionId: 'agent',
      cwd: workspace,
      sandbox: { mode: 'workspace-write', network: 'off' },
    });
    const on = await rejection(
      client.run({
        sessionId: 'agent',
        command: 'touch on',
        sandboxPolicy: { mode: 'workspace-write', network: 'on' },
      }),
    );
    expect(on.errorName).toBe('FORBIDDEN');
    expect(on.message).toContain('runs with the network off; a request may not turn it on');
    const update = await rejection(client.call(SessionUpdate, { sessionId: 'agent', sandbox: { network: 'on' } }));
    expect(update.errorName).toBe('FORBIDDEN');
    const reopen = await rejection(
      client.call(SessionOpen, { sessionId: 'agent', cwd: workspace, sandbox: { mode: 'workspace-write' } }),
    );
    expect(reopen.message).toContain('sandbox.network (has off, asked on)');
    expect(existsSync(join(workspace, 'on'))).toBe(false);

    // A session with the network on may be turned off, and then stays off.
    await client.call(SessionOpen, { sessionId: 'open', cwd: workspace, sandbox: { mode: 'workspace-write' } });
    const narrowed = await client.call(SessionUpdate, { sessionId: 'open', sandbox: { network: 'off' } });
    expect(narrowed.sandbox).toMatchObject({ mode: 'workspace-write', network: 'off' });
    const back = await rejection(client.call(SessionUpdate, { sessionId: 'open', sandbox: { network: 'on' } }));
    expect(back.errorName).toBe('FORBIDDEN');
  });
});
