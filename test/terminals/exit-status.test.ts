/**
 * Exit statuses outside `terminal/run`: a command that ends through `terminal/send` (a server
 * started, then stopped with Ctrl-C) or that a `terminal/read` collects carries its status; `$?`
 * goes on from run to run as in any shell.
 */
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { createShellTools } from '../../client/tool/index.js';
import { TerminalRead, TerminalSend, TerminalSignal } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';
import { shellFixture } from './terminal-helpers.js';

describe('exit statuses of commands that end through send or read', () => {
  test('$? survives between runs: after false, the next run prints 1', async () => {
    const { run } = await shellFixture();
    expect(await run('false')).toMatchObject({ exitCode: 1 });
    expect(await run('echo $?')).toMatchObject({ exitCode: 0, output: '1\n' });
    expect(await run('(exit 7)')).toMatchObject({ exitCode: 7 });
    expect(await run('echo "was $?"')).toMatchObject({ output: 'was 7\n' });
  });

  test('under set -e the shell lives through what set -e exempts and ends at a failing command, as at its prompt', async () => {
    const { run } = await shellFixture();
    expect(await run('set -e')).toMatchObject({ exitCode: 0, state: 'completed' });
    expect(await run('false && true')).toMatchObject({ exitCode: 1, state: 'completed' });
    expect(await run('! true')).toMatchObject({ exitCode: 1, state: 'completed' });
    // The marker functions return 0 under set -e: the last status does not carry into `$?`.
    expect(await run('echo "alive $?"')).toMatchObject({ exitCode: 0, output: 'alive 0\n' });
    expect(await run('false; echo never')).toMatchObject({ state: 'exited', output: '' });
  });

  test('a command whose last line ends in a backslash ends there', async () => {
    const { run } = await shellFixture();
    expect(await run('echo a \\')).toMatchObject({ exitCode: 0, output: 'a\n' });
    expect(await run('echo "next $?"')).toMatchObject({ output: 'next 0\n' });
  });

  test('a server started, then stopped with Ctrl-C: the send that brings the prompt back carries its status', async () => {
    const { run, client, sessionId, terminalId } = await shellFixture();
    const server = await run(
      `python3 -c 'import signal,sys,time; signal.signal(signal.SIGINT, lambda *a: sys.exit(3)); print("serving", flush=True); time.sleep(60)'`,
      { idleMs: 1_000 },
    );
    expect(server).toMatchObject({ state: 'idle' });
    expect(server.output).toContain('serving');
    expect((await client.call(TerminalSignal, { sessionId, terminalId, signal: 'SIGINT' })).delivered).toBe(true);
    const polled = await client.call(TerminalSend, { sessionId, terminalId, text: '', submit: false });
    expect(polled).toMatchObject({ waitReason: 'prompt', exitCode: 3 });
    // A command typed with terminal/send at the prompt ends with its own status.
    const typed = await client.call(TerminalSend, { sessionId, terminalId, text: 'sh -c "exit 4"', submit: true });
    expect(typed).toMatchObject({ waitReason: 'prompt', exitCode: 4 });
    expect(await run('echo $?')).toMatchObject({ output: '4\n' });
  });

  test('terminal/read carries the status once the shell is back at its prompt, not while a command runs', async () => {
    const { run, client, sessionId, terminalId } = await shellFixture();
    const started = await run('sleep 0.8; exit_with() { return $1; }; exit_with 5', { idleMs: 300 });
    expect(started.state).toBe('idle');
    const during = await client.call(TerminalRead, { sessionId, terminalId, offset: started.cursor });
    expect(during.exitCode).toBeUndefined();
    const after = await waitFor(async () => {
      const read = await client.call(TerminalRead, { sessionId, terminalId, offset: started.cursor });
      return read.exitCode === undefined ? undefined : read;
    }, 'the shell back at its prompt');
    expect(after.exitCode).toBe(5);
  });

  test('the persistent bash shows the status of a command that ended through what it typed', async () => {
    const daemon = await startDaemon();
    const cwd = join(daemon.dir, 'ws');
    mkdirSync(cwd, { recursive: true });
    const client = await daemon.connect();
    const tools = await createShellTools({ client, session: { id: 'agent', cwd }, persistent: true, idleMs: 800 });
    const shell = tools.shell;
    const bash = (command: string) => shell.execute({ command, description: 'A step of the test' });
    const waiting = await bash('read -p "Code? " x; exit_with() { return $1; }; exit_with "$x"');
    expect(waiting.text.startsWith('Code? ')).toBe(true);
    expect((await bash('6')).text).toMatch(/\n\[exit code: 6\]$/);
    expect((await bash('echo $?')).text).toBe('6\n');
  });
});
