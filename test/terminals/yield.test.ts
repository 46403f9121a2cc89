/**
 * `terminal/run` `yieldMs`: a command still going then is left running; the answer has its output
 * so far and `state: 'running'`, and later reads or sends collect the rest and its exit status.
 */
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { createShellTools } from '../../client/tool/index.js';
import { yieldedLine } from '../../client/terminal-render.js';
import { TerminalRead, TerminalSend } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';
import { shellFixture } from './terminal-helpers.js';

const COUNT = `python3 -c 'import time; [print(i, flush=True) or time.sleep(1) for i in range(5)]'`;

describe('terminal/run yieldMs', { timeout: 60_000 }, () => {
  test('a five-second loop yielded after 1.5 s goes on; terminal/read collects the rest and the exit code', async () => {
    const { run, client, sessionId, terminalId } = await shellFixture();
    const started = Date.now();
    const yielded = await run(COUNT, { yieldMs: 1_500 });
    const elapsed = Date.now() - started;
    console.log(`yielded after ${elapsed} ms with ${JSON.stringify(yielded.output)}`);
    expect(yielded).toMatchObject({ state: 'running', waitReason: 'yielded' });
    expect(yielded.exitCode).toBeUndefined();
    expect(yielded.output).toMatch(/^0\n(1\n)?$/);
    expect(elapsed).toBeLessThan(4_000);
    expect(yielded.terminal.foreground?.command).toBe('python3');
    // The command went on: the rest comes through terminal/read from the run's cursor, then the status.
    const rest = await waitFor(async () => {
      const read = await client.call(TerminalRead, { sessionId, terminalId, offset: yielded.cursor });
      return read.exitCode === undefined ? undefined : read;
    }, 'the loop to end');
    expect(rest.exitCode).toBe(0);
    expect(yielded.output + rest.text).toMatch(/^0\n1\n2\n3\n4\n/);
    expect(await run('echo next')).toMatchObject({ state: 'completed', output: 'next\n' });
  });

  test('an empty send collects a yielded command with its status', async () => {
    const { run, client, sessionId, terminalId } = await shellFixture();
    const yielded = await run('sleep 1.2; echo finished; (exit 9)', { yieldMs: 300 });
    expect(yielded).toMatchObject({ state: 'running', output: '' });
    const collected = await client.call(TerminalSend, { sessionId, terminalId, text: '', timeoutMs: 10_000 });
    expect(collected).toMatchObject({ waitReason: 'prompt', exitCode: 9 });
    expect(collected.output).toContain('finished');
  });

  test('a command that ends before yieldMs answers as usual', async () => {
    const { run } = await shellFixture();
    expect(await run('echo quick; false', { yieldMs: 5_000 })).toMatchObject({
      state: 'completed',
      exitCode: 1,
      output: 'quick\n',
    });
  });

  test('the persistent bash yields when the harness configures it, and the next call shows the rest', async () => {
    const daemon = await startDaemon();
    const cwd = join(daemon.dir, 'ws');
    mkdirSync(cwd, { recursive: true });
    const client = await daemon.connect();
    const tools = await createShellTools({ client, session: { id: 'agent', cwd }, persistent: true, yieldMs: 1_500 });
    const shell = tools.shell;
    const bash = (command: string) => shell.execute({ command, description: 'A step of the test' });
    const first = await bash(COUNT);
    expect(first.text).toMatch(new RegExp(`^0\\n(1\\n)?\\[still running after 1500ms;`));
    expect(first.text.endsWith(yieldedLine(1_500))).toBe(true);
    // Once the loop ended, the next call shows what it printed since, then runs at the prompt.
    await waitFor(async () => {
      const read = await client.call(TerminalRead, { sessionId: 'agent', terminalId: shell.terminalId()! });
      return read.exitCode !== undefined;
    }, 'the loop to end');
    const next = await bash('echo after');
    expect(next.text).toMatch(/4\n[^]*after\n/);
  });
});
