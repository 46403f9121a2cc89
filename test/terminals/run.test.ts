/** `terminal/run` against a real daemon and a real PTY: state persists, markers cannot be faked, exit codes. */
import { describe, expect, test } from 'vitest';
import { TerminalList, TerminalRead } from '../../protocol/methods.js';
import { shellFixture } from './terminal-helpers.js';

describe('terminal/run', () => {
  test('cd and export persist between calls', async () => {
    const { run } = await shellFixture();
    const first = await run('cd /tmp; export K=v');
    expect(first).toMatchObject({ state: 'completed', exitCode: 0, output: '' });
    const second = await run('echo "$PWD $K"');
    expect(second).toMatchObject({ state: 'completed', exitCode: 0, output: '/tmp v\n' });
  });

  test('PS1=x and a heredoc still complete', async () => {
    const { run } = await shellFixture();
    expect(await run('PS1=x')).toMatchObject({ state: 'completed', exitCode: 0 });
    const heredoc = await run("cat <<'EOF'\nline one\nline two\nEOF");
    expect(heredoc).toMatchObject({ state: 'completed', exitCode: 0, output: 'line one\nline two\n' });
  });

  test('false gives exit code 1; the stream shows the command, not the wrapper; a raw OSC 133 does not end a run early', async () => {
    const { run, client, sessionId, terminalId } = await shellFixture();
    expect(await run('false')).toMatchObject({ state: 'completed', exitCode: 1, output: '' });
    const typed = (await client.call(TerminalRead, { sessionId, terminalId, offset: 0 })).text;
    expect(typed).toContain('false\n');
    expect(typed).not.toContain('__execd');
    const result = await run(`printf '\\033]133;D;0\\007'; sleep 0.3; echo after`);
    expect(result).toMatchObject({ state: 'completed', exitCode: 0 });
    expect(result.output.endsWith('after\n')).toBe(true);
    // The raw OSC 133 a program prints is its own output and passes through.
    expect(result.output).toContain('\x1b]133;D;0\x07');
  });

  test("after exec bash the shell is not the daemon's own: a run types nothing and says not_at_prompt", async () => {
    const { run, client, sessionId, terminalId } = await shellFixture();
    // The new bash has neither the daemon's prompt command nor its functions.
    expect(await run('exec bash --noprofile --norc -i')).toMatchObject({ state: 'waiting_for_input' });
    const refused = await run('echo typed-into-the-new-shell');
    expect(refused).toMatchObject({ state: 'not_at_prompt', waitReason: 'not_at_prompt', output: '' });
    const stream = (await client.call(TerminalRead, { sessionId, terminalId, offset: 0 })).text;
    expect(stream).not.toContain('typed-into-the-new-shell');
    // The secret is never typed, so never echoed (issue 27.22).
    expect(stream).not.toMatch(/execd=[0-9a-f]{16}/);
  });

  test('exit 3 reports exited with the code; the terminal is listed exited', async () => {
    const { run, client, sessionId } = await shellFixture();
    const result = await run('exit 3');
    expect(result.state).toBe('exited');
    expect(result.terminal.status).toBe('exited');
    expect(result.terminal.exitCode).toBe(3);
    const [listed] = await client.call(TerminalList, { sessionId });
    expect(listed).toMatchObject({ status: 'exited', exitCode: 3 });
  });
});
