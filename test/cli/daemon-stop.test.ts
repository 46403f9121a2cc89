/**
 * A foreground run cut by `execd stop` says the daemon stopped (issue 26.11), to the CLI's user and
 * in the model's rendering, instead of passing for a command that died of SIGTERM on its own.
 */
import { describe, expect, it } from 'vitest';
import { DaemonStatus } from '../../protocol/methods.js';
import { DAEMON_STOPPED_LINE, renderResult } from '../../shared/render.js';
import { cliWorld } from '../helpers/cli.js';
import { startDaemon } from '../helpers/daemon.js';
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
});
