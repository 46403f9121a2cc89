/**
 * The `bash` tool with the harness's `yieldMs` (SPEC §14) through a real daemon: a slow command
 * answers its output so far and the job it goes on as, which `job_output` then follows; a fast one
 * renders as always; without the option, or without background runs, nothing yields and the
 * model-visible parameters are the same.
 */
import { describe, expect, it } from 'vitest';
import { createShellTools } from '../../../client/tool/index.js';
import { startDaemon } from '../../helpers/daemon.js';

describe('bash tool yieldMs', { timeout: 60_000 }, () => {
  it('a slow command yields to a job that job_output follows; a fast one renders as always', async () => {
    const daemon = await startDaemon();
    const client = await daemon.connect();
    const tools = await createShellTools({ client, session: { id: 's1', cwd: daemon.dir }, yieldMs: 400 });
    const plain = await createShellTools({ client, session: { id: 's2', cwd: daemon.dir } });
    expect(tools.shell.inputSchema).toEqual(plain.shell.inputSchema);
    const started = performance.now();
    const slow = await tools.shell.execute({ command: 'echo compiling; sleep 2; echo linked', description: 'Build' });
    console.log(`yielded tool answer after ${Math.round(performance.now() - started)} ms:\n${slow.text}`);
    expect(slow.details).toMatchObject({ kind: 'yielded' });
    const jobId = /background job (bash-\d+)/.exec(slow.text)?.[1];
    expect(slow.text).toMatch(/^compiling\n\[still running after \d+ ms: continues as background job bash-\d+;/);
    const output = await tools.jobOutput!.execute({ job_id: jobId, wait_for: { output: 'linked' } });
    expect(output.text).toContain('linked');
    expect(output.text).not.toContain('compiling');
    const fast = await tools.shell.execute({ command: 'echo quick', description: 'Echo' });
    expect(fast).toMatchObject({ text: 'quick\n', details: { kind: 'run' } });
  });

  it('without background runs the option is ignored: the slow command is waited for', async () => {
    const daemon = await startDaemon();
    const client = await daemon.connect();
    const tools = await createShellTools({
      client,
      session: { id: 's1', cwd: daemon.dir },
      enableRunInBackground: false,
      yieldMs: 100,
    });
    const result = await tools.shell.execute({ command: 'sleep 0.5; echo waited', description: 'Wait' });
    expect(result).toMatchObject({ text: 'waited\n', details: { kind: 'run' } });
  });
});
