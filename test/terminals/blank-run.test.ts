/** A blank `terminal/run` is an empty line at the prompt: no output, the last status, at once. */
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { createShellTools } from '../../client/tool/index.js';
import { TerminalRead, TerminalSend } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { shellFixture } from './terminal-helpers.js';

describe('blank commands', () => {
  test('an empty or whitespace-only run answers at once with empty output and the last exit status', async () => {
    const { run, client, sessionId, terminalId } = await shellFixture();
    expect(await run('')).toMatchObject({ state: 'completed', exitCode: 0, output: '', waitReason: 'prompt' });
    await run('(exit 2)');
    // The prompt after that run may still be on its way: the offset is taken once output is quiet.
    await client.call(TerminalSend, { sessionId, terminalId, text: '', submit: false, idleMs: 300 });
    const before = (await client.call(TerminalRead, { sessionId, terminalId })).nextOffset;
    const started = Date.now();
    for (const blank of ['', '   ', '\n', ' \t\n ']) {
      expect(await run(blank), JSON.stringify(blank)).toMatchObject({
        state: 'completed',
        exitCode: 2,
        output: '',
        waitReason: 'prompt',
      });
    }
    const elapsed = Date.now() - started;
    console.log(`four blank runs answered in ${elapsed} ms`);
    expect(elapsed).toBeLessThan(1_000);
    // Nothing was typed into the terminal.
    expect((await client.call(TerminalRead, { sessionId, terminalId })).nextOffset).toBe(before);
    expect(await run('echo $?')).toMatchObject({ output: '2\n' });
  });

  test('the one-shot bash tool still refuses an empty command', async () => {
    const daemon = await startDaemon();
    const cwd = join(daemon.dir, 'ws');
    mkdirSync(cwd, { recursive: true });
    const client = await daemon.connect();
    const tools = await createShellTools({ client, session: { id: 'agent', cwd } });
    for (const command of ['', '  ']) {
      expect(await tools.shell.execute({ command, description: 'Nothing' })).toMatchObject({
        isError: true,
        text: 'invalid command: expected a non-empty string',
      });
    }
  });
});
