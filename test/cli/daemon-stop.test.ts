/**
 * A foreground run cut by `execd stop` says the daemon stopped (issue 26.11), to the CLI's user and
 * in the model's rendering, instead of passing for a command that died of SIGTERM on its own.
 */
import { spawn } from 'node:child_process';
import { createConnection } from 'node:net';
import { describe, expect, it } from 'vitest';
import { DaemonStatus } from '../../protocol/methods.js';
import { DAEMON_STOPPED_LINE, renderResult } from '../../shared/render.js';
import { cliWorld } from '../helpers/cli.js';
import { CLI, startDaemon } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';

describe('a run the daemon shutdown cuts', { timeout: 120_000 }, () => {
  it('execd run says the daemon stopped, on one line before the signal marker', async () => {
    const world = cliWorld();
    const run = world.spawn(['run', '--', 'echo started; sleep 60']);
    await waitFor(() => run.stdout().includes('started'), 'the command runs', { timeoutMs: 60_000 });
    expect((await world.run(['stop'])).code).toBe(0);
    const done = await run.done;
    expect(done.stderr).toBe(`${DAEMON_STOPPED_LINE}\n[killed by signal: SIGTERM]\n`);
    expect(done.code).toBe(143);
  });

  it('the result carries daemonStopped and the model reads the line', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s');
    const running = client.run({ sessionId: 's', command: 'sleep 60' });
    // The run is in flight once the daemon has a process for it.
    await waitFor(async () => (await client.call(DaemonStatus, {})).processes > 0, 'the command runs');
    const stopped = daemon.stop();
    const result = await running;
    await stopped;
    expect(result).toMatchObject({ aborted: true, daemonStopped: true, signal: 'SIGTERM' });
    expect(renderResult(result)).toBe(`(no output)\n${DAEMON_STOPPED_LINE}\n[killed by signal: SIGTERM]`);
  });

  it('stop --keep-jobs returns once the state dir is free: `stop --keep-jobs && serve --detach` with a --follow attached, 10 of 10', async () => {
    const world = cliWorld();
    const started = await world.run(['start', '--', 'while :; do echo tick; sleep 0.1; done']);
    expect(started.code).toBe(0);
    const jobId = /bash-\d+/.exec(started.stdout + started.stderr)![0];
    const outcomes: string[] = [];
    for (let round = 0; round < 10; round++) {
      // Sessions do not outlive their daemon: a run re-creates the CLI's, where the kept job is listed.
      expect((await world.run(['run', '--', 'true'])).code).toBe(0);
      // A client attached to the job: the old daemon has a connection to end while it stops.
      const follow = world.spawn(['read', '--follow', jobId]);
      await waitFor(() => follow.stdout().includes('tick'), 'the follow reads', { timeoutMs: 60_000 });
      // And one that never closes its end: the old daemon waits for it before it lets the state dir go.
      const idle = createConnection({ path: world.socketPath, allowHalfOpen: true });
      await new Promise((resolveConnect) => idle.once('connect', resolveConnect));
      idle.on('error', () => undefined);
      const restart = await new Promise<{ code: number | null; stderr: string }>((resolveRestart) => {
        const child = spawn(
          'sh',
          ['-c', `"${process.execPath}" "${CLI}" stop --keep-jobs && "${process.execPath}" "${CLI}" serve --detach`],
          {
            env: world.env,
            stdio: ['ignore', 'ignore', 'pipe'],
          },
        );
        let stderr = '';
        child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
        child.once('exit', (code) => resolveRestart({ code, stderr }));
      });
      outcomes.push(restart.code === 0 ? 'ok' : `exit ${restart.code}: ${restart.stderr.trim()}`);
      idle.destroy();
      follow.proc.kill();
      await follow.done;
    }
    console.log(`stop --keep-jobs && serve --detach: ${outcomes.filter((o) => o === 'ok').length} of 10 ok`);
    expect(outcomes).toEqual(Array<string>(10).fill('ok'));
    // The job outlived ten daemons.
    expect((await world.run(['run', '--', 'true'])).code).toBe(0);
    const listed = await world.run(['jobs']);
    expect(listed.stdout).toMatch(new RegExp(`${jobId}\\s+running`));
    expect((await world.run(['kill', jobId])).code).toBe(0);
  });
});
