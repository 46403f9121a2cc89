/**
 * SPEC §6's re-open rule through the real CLI (issue 26.1): commands that only look at an agent's
 * session attach to it without facts, so its sandbox, env and cwd stay as the agent opened them.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { connect } from '../../client/connect.js';
import { SessionOpen, ShellStart } from '../../protocol/methods.js';
import { cliWorld } from '../helpers/cli.js';

describe('CLI commands that look leave a session as it is', { timeout: 180_000 }, () => {
  it('an agent session opened workspace-write keeps writing confined after jobs, attach, read, term list and status', async () => {
    const world = cliWorld();
    expect((await world.run(['run', '--', 'true'])).code).toBe(0);
    const workspace = join(world.dir, 'ws');
    const outside = join(world.dir, 'outside');
    mkdirSync(workspace);
    mkdirSync(outside);
    const agent = await connect({ socketPath: world.socketPath, stateDir: world.stateDir, clientName: 'agent' });
    onTestFinished(() => agent.close());
    await agent.call(SessionOpen, {
      sessionId: 'agent-A',
      cwd: workspace,
      env: { AGENT_VAR: 'kept' },
      sandbox: { mode: 'workspace-write' },
    });
    const started = await agent.call(ShellStart, {
      sessionId: 'agent-A',
      command: 'sleep 60',
    });

    const looks = [
      ['jobs', '--session', 'agent-A'],
      ['attach', '--session', 'agent-A', 'term-99'],
      ['read', '--session', 'agent-A', started.jobId],
      ['wait', '--session', 'agent-A', '--timeout', '10', started.jobId],
      ['peek', '--session', 'agent-A', started.jobId],
      ['term', 'list', '--session', 'agent-A'],
      ['status'],
    ];
    for (const args of looks) {
      const looked = await world.run(args, { cwd: outside });
      console.log(`execd ${args.join(' ')} -> exit ${looked.code}`);
    }
    const jobs = await world.run(['jobs', '--session', 'agent-A'], { cwd: outside });
    expect(jobs.stdout).toContain(started.jobId);

    const run = await agent.run({
      sessionId: 'agent-A',
      command: `pwd; echo "var=$AGENT_VAR"; touch ${outside}/escaped /etc/execd-escaped; touch inside`,
    });
    expect(run.stdout.text).toContain(`${workspace}\nvar=kept\n`);
    expect(run.sandbox).toMatchObject({ mode: 'workspace-write', denied: true });
    expect(existsSync(join(outside, 'escaped'))).toBe(false);
    expect(existsSync(join(workspace, 'inside'))).toBe(true);
  });

  it('a look at a session that does not exist creates nothing and says so', async () => {
    const world = cliWorld();
    expect((await world.run(['run', '--', 'true'])).code).toBe(0);
    const jobs = await world.run(['jobs', '--session', 'nobody']);
    expect(jobs.code).toBe(0);
    const read = await world.run(['read', '--session', 'nobody', 'bash-1']);
    expect(read.code).not.toBe(0);
    expect(read.stderr).toBe(
      'execd read: no session nobody in the daemon (execd run, execd start or a harness create one)\n',
    );
    const status = await world.run(['status', '--json']);
    const sessions = (JSON.parse(status.stdout) as { sessions: { sessionId: string }[] }).sessions;
    expect(sessions.map((session) => session.sessionId)).not.toContain('nobody');
  });
});
