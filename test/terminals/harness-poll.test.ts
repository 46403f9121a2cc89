/**
 * Terminals as a harness drives them: a harness that polls with empty sends ("send an empty
 * command to wait for more output") never wedges the terminal.
 */
import { describe, expect, test } from 'vitest';
import { TerminalRead, TerminalSend, TerminalSignal } from '../../protocol/methods.js';
import { waitFor } from '../helpers/wait.js';
import { shellFixture } from './terminal-helpers.js';

describe('a harness polling with empty sends', () => {
  test('an empty send leaves the shell at its prompt: the next run runs', async () => {
    const { run, client, sessionId, terminalId } = await shellFixture();
    const polled = await client.call(TerminalSend, { sessionId, terminalId, text: '', submit: false });
    expect(polled).toMatchObject({ waitReason: 'prompt', output: '' });
    expect(await run('echo ok')).toMatchObject({ state: 'completed', exitCode: 0, output: 'ok\n' });
  });

  test('a command that ended between polls is seen at its prompt, and the next run runs', async () => {
    const { run, client, sessionId, terminalId } = await shellFixture();
    const started = await run('sleep 1; echo done', { idleMs: 300 });
    expect(started.state).toBe('idle');
    const poll = () => client.call(TerminalSend, { sessionId, terminalId, text: '', submit: false, idleMs: 300 });
    // Polls until the command has ended: each poll answers within its idleMs, the last one `prompt`.
    const seen = await waitFor(async () => ((await poll()).waitReason === 'prompt' ? true : undefined), 'a prompt');
    expect(seen).toBe(true);
    const read = await client.call(TerminalRead, { sessionId, terminalId, offset: started.cursor });
    expect(read.text).toContain('done');
    expect(await run('echo ok')).toMatchObject({ state: 'completed', output: 'ok\n' });
  });

  test('terminal/signal SIGINT, then an empty send: the prompt is seen and the next run runs', async () => {
    const { run, client, sessionId, terminalId } = await shellFixture();
    const server = await run('python3 -m http.server 0 --bind 127.0.0.1', { idleMs: 1_000 });
    expect(server.state).toBe('idle');
    expect((await client.call(TerminalSignal, { sessionId, terminalId, signal: 'SIGINT' })).delivered).toBe(true);
    const polled = await client.call(TerminalSend, { sessionId, terminalId, text: '', submit: false });
    expect(polled.waitReason).toBe('prompt');
    expect(await run('echo ok')).toMatchObject({ state: 'completed', output: 'ok\n' });
  });
});
