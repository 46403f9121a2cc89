/**
 * `terminal/run` completion cannot be forged (issues 27.2, 27.12, 27.13): the marker secret is in
 * nothing a child can read, a marker printed by a program in the foreground ends nothing, and no
 * run line is typed into anything but the daemon's own shell at its prompt.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { TerminalRead, TerminalSend } from '../../protocol/methods.js';
import { shellFixture } from './terminal-helpers.js';

describe('forged completions', () => {
  test('a child that reads the secret from its shell and prints the markers: the run answers its real exit code and keeps its output', async () => {
    const { run } = await shellFixture();
    const forger = [
      `S=$(tr '\\0' '\\n' < /proc/$PPID/environ | grep -o 'execd=[0-9a-f]*' | head -1)`,
      `printf '\\033]133;D;0;%s\\007' "$S"`,
      'echo forged-printed; sleep 2; echo real-end; exit 42',
    ].join('; ');
    const started = performance.now();
    const result = await run(`bash -c ${JSON.stringify(forger).replaceAll('$', '\\$')}`, { timeoutMs: 30_000 });
    const ms = performance.now() - started;
    console.log(`forging run answered ${result.state}, exit ${result.exitCode} after ${ms.toFixed(0)} ms`);
    expect(result).toMatchObject({ state: 'completed', exitCode: 42 });
    expect(result.output).toContain('forged-printed');
    expect(result.output).toContain('real-end');
  });

  test('with the secret in hand, a program in the foreground still cannot end the run; the secret is not in environ, exported vars or history', async () => {
    const { run } = await shellFixture();
    // The command itself may read its shell's functions; it hands the secret to a child.
    const command = [
      `S=$(declare -f __execd_e | grep -o 'execd=[0-9a-f]*' | head -1)`,
      `bash -c "printf '\\033]133;D;0;%s\\007\\033]133;%s;e;x;0\\007' $S $S; sleep 1; echo after-forged; exit 42"`,
    ].join('; ');
    const result = await run(command, { timeoutMs: 30_000 });
    expect(result).toMatchObject({ state: 'completed', exitCode: 42 });
    expect(result.output).toContain('after-forged');
    const leaks = await run(
      `tr '\\0' '\\n' < /proc/$$/environ | grep -cE 'execd=[0-9a-f]{16}'; bash -c 'echo "exported=[$PROMPT_COMMAND]"'; history | grep -c __execd`,
    );
    expect(leaks.output).toBe('0\nexported=[]\n0\n');
  });

  test('a Python reader waiting on the terminal cannot finish the next run: nothing is typed into it', async () => {
    const { run, client, sessionId, terminalId, daemon } = await shellFixture();
    const reader = `python3 -c 'import sys\nfor line in sys.stdin:\n    print("GOT", line.strip(), flush=True)'`;
    expect(await run(reader, { idleMs: 10_000 })).toMatchObject({ state: 'waiting_for_input' });
    const marker = join(daemon.dir, 'never');
    const forged = await run(`touch ${marker}; false`);
    console.log(`run while a reader owns the terminal: ${forged.state}`);
    expect(forged).toMatchObject({ state: 'not_at_prompt', output: '' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const stream = (await client.call(TerminalRead, { sessionId, terminalId, offset: 0 })).text;
    // The reader printed nothing: not the run line, not its nonce (its own source is echoed, nothing more).
    expect(stream).not.toMatch(/GOT [^"]/);
    expect(stream).not.toContain('__execd');
    expect(existsSync(marker)).toBe(false);
    // terminal/send still talks to the reader.
    const sent = await client.call(TerminalSend, { sessionId, terminalId, text: 'hello', submit: true, idleMs: 1_000 });
    expect(sent.output).toContain('GOT hello');
  });

  test('after exec sh, terminal/run refuses instead of running another command', async () => {
    const { run, daemon } = await shellFixture();
    await run('exec sh', { idleMs: 1_000 });
    const created = join(daemon.dir, 'F');
    const result = await run(`echo touch ${created}`);
    console.log(`run after exec sh: ${result.state}`);
    expect(result).toMatchObject({ state: 'not_at_prompt' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(existsSync(created)).toBe(false);
  });
});
