/** `execd wait JOB --match | --port | --path` (SPEC §14) and the `job_output` tool's `wait_for`, against a real daemon. */
import { describe, expect, it } from 'vitest';
import { connect } from '../../client/connect.js';
import { createShellTools } from '../../client/tool/index.js';
import { cliWorld } from '../helpers/cli.js';

describe('waits on conditions from the CLI and the tool', () => {
  it('execd wait --match, --path exit 0 naming the condition; --timeout still exits 124', async () => {
    const world = cliWorld();
    const started = await world.run(['start', '--', 'sleep 0.3; echo listening on 4000; touch ready; sleep 30']);
    expect(started.code).toBe(0);
    const jobId = /bash-\d+/.exec(started.stdout)![0];
    const matched = await world.run(['wait', jobId, '--match', 'listening on \\d+', '--timeout', '20000']);
    expect(matched.code).toBe(0);
    expect(matched.stdout).toContain('(output)');
    const found = await world.run(['wait', jobId, '--path', 'ready', '--timeout', '20000']);
    expect(found.stdout).toContain('(path)');
    const timedOut = await world.run(['wait', jobId, '--port', '1', '--timeout', '200']);
    expect(timedOut.code).toBe(124);
    const bad = await world.run(['wait', jobId, '--port', '70000']);
    expect(bad.stderr).toContain('--port must be a TCP port from 1 to 65535, got "70000"');
    await world.run(['kill', jobId]);
  });

  it('job_output with wait_for waits for the output, then reads it', async () => {
    const world = cliWorld();
    // Any subcommand starts the daemon.
    expect((await world.run(['run', 'true'])).code).toBe(0);
    const client = await connect({ socketPath: world.socketPath, stateDir: world.stateDir });
    try {
      const tools = await createShellTools({ client, session: { id: 'tool', cwd: world.dir } });
      const bash = tools.shell as { execute(args: unknown): Promise<{ text: string }> };
      const jobOutput = tools.jobOutput!;
      const start = await bash.execute({
        command: 'sleep 0.5; echo server up; sleep 30',
        description: 'a server',
        run_in_background: true,
      });
      const jobId = /bash-\d+/.exec(start.text)![0];
      const began = Date.now();
      const read = await jobOutput.execute({ job_id: jobId, wait_for: { output: 'server up' }, wait_ms: 20_000 });
      console.log(`job_output wait_for answered after ${Date.now() - began} ms`);
      expect(read.text).toContain('server up');
    } finally {
      client.close();
    }
  });
});
