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

  test('false gives exit code 1; output with an old end marker or raw OSC 133 does not end a run early', async () => {
    const { run, client, sessionId, terminalId } = await shellFixture();
    expect(await run('false')).toMatchObject({ state: 'completed', exitCode: 1, output: '' });
    // The stream shows the typed line of the last run with its nonce; the shell's own marker
    // function prints that old end marker, secret and all.
    const typed = (await client.call(TerminalRead, { sessionId, terminalId, offset: 0 })).text;
    const oldNonce = /__execd_e ([0-9a-f]+) \$\?/.exec(typed)?.[1];
    expect(oldNonce).toBeDefined();
    const replay = `__execd_e ${oldNonce} 7; printf '\\033]133;D;0\\007'; sleep 0.3; echo after`;
    const result = await run(replay);
    expect(result).toMatchObject({ state: 'completed', exitCode: 0 });
    expect(result.output.endsWith('after\n')).toBe(true);
    // The raw OSC 133 a program prints is its own output and passes through.
    expect(result.output).toContain('\x1b]133;D;0\x07');
  });

  test('after exec bash, a shell without the marker functions, runs still complete with their status', async () => {
    const { run } = await shellFixture();
    // The new bash has neither the daemon's prompt command nor its functions: the run waits for input.
    expect(await run('exec bash --noprofile --norc -i')).toMatchObject({ state: 'waiting_for_input' });
    // The next runs spell the markers out and complete with their status.
    expect(await run('echo "in $0"; (exit 4)')).toMatchObject({ state: 'completed', exitCode: 4, output: 'in bash\n' });
    expect(await run('type __execd_s >/dev/null 2>&1 || echo none')).toMatchObject({
      state: 'completed',
      exitCode: 0,
      output: 'none\n',
    });
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
