/**
 * A `terminal/run` timeout ends the command, not the shell: SIGINT to the foreground process
 * group, then SIGTERM and SIGKILL to that group after `graceMs` each; the shell keeps its state and
 * the answer names what was stopped. Only a shell that itself does not return to its prompt is
 * closed, and only after `graceMs`.
 */
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { createShellTools } from '../../client/tool/index.js';
import { TerminalList } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { shellFixture } from './terminal-helpers.js';

const GRACE_MS = 700;

describe('terminal/run timeouts keep the shell', { timeout: 60_000 }, () => {
  test('less under a timeout: SIGINT leaves it waiting for keys, SIGTERM after graceMs ends it, the shell stays', async () => {
    const { run } = await shellFixture({ config: { graceMs: GRACE_MS } });
    await run('cd /tmp; export KEEP=yes');
    const started = Date.now();
    // less +G on an endless pipe reads until it is interrupted; SIGINT stops the reading and less
    // then waits for keys, which is not the prompt.
    const result = await run('yes | less +G', { timeoutMs: 800, idleMs: 20_000 });
    const elapsed = Date.now() - started;
    console.log(`less timed out and was stopped with ${result.stoppedWith?.signal} after ${elapsed} ms`);
    expect(result).toMatchObject({ state: 'timed_out', interrupted: true, waitReason: 'timeout' });
    // The group's leader `yes` died of SIGINT; `less` stayed, and it is what SIGTERM ended.
    expect(result.stoppedWith).toMatchObject({ signal: 'SIGTERM', command: 'less' });
    expect(result.stoppedWith!.pgid).toBeGreaterThan(0);
    // The SIGTERM came a full grace after the SIGINT, not as soon as less read the terminal again.
    expect(elapsed).toBeGreaterThanOrEqual(800 + GRACE_MS);
    expect(result.terminal.status).toBe('running');
    expect(await run('echo "$PWD $KEEP"')).toMatchObject({ state: 'completed', output: '/tmp yes\n' });
  });

  test('a program that ignores SIGINT and SIGTERM is killed with SIGKILL; the shell stays', async () => {
    const { run } = await shellFixture({ config: { graceMs: GRACE_MS } });
    await run('export KEEP=yes');
    const ignoring = `python3 -c 'import signal,time; [signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)]; print("armed", flush=True); time.sleep(60)'`;
    const result = await run(ignoring, { timeoutMs: 1_500 });
    expect(result).toMatchObject({ state: 'timed_out', interrupted: true });
    expect(result.stoppedWith).toMatchObject({ signal: 'SIGKILL', command: 'python3' });
    expect(result.output).toContain('armed');
    expect(await run('echo $KEEP')).toMatchObject({ output: 'yes\n' });
  });

  test('a shell that itself does not return to its prompt is closed, after graceMs', async () => {
    const { run, client, sessionId } = await shellFixture({ config: { graceMs: GRACE_MS } });
    const started = Date.now();
    // A loop of builtins runs in the shell's own process group: there is no other group to end.
    const result = await run(`trap '' INT; while :; do :; done`, { timeoutMs: 800, idleMs: 20_000 });
    const elapsed = Date.now() - started;
    console.log(`a shell that ignored SIGINT was closed ${elapsed - 800} ms after the timeout`);
    expect(result).toMatchObject({ state: 'timed_out', interrupted: false });
    expect(result.stoppedWith).toBeUndefined();
    expect(elapsed).toBeGreaterThanOrEqual(800 + GRACE_MS);
    const [listed] = await client.call(TerminalList, { sessionId });
    expect(listed!.status).toBe('exited');
  });

  test('the persistent bash says what was killed and keeps the shell, for a run and for a typed call', async () => {
    const daemon = await startDaemon({ config: { graceMs: GRACE_MS } });
    const cwd = join(daemon.dir, 'ws');
    mkdirSync(cwd, { recursive: true });
    const client = await daemon.connect();
    const tools = await createShellTools({ client, session: { id: 'agent', cwd }, persistent: true, idleMs: 2_000 });
    const shell = tools.shell;
    const bash = (command: string, timeoutMs?: number) =>
      shell.execute({ command, description: 'A step of the test', ...(timeoutMs ? { timeoutMs } : {}) });
    await bash('export KEEP=kept');
    const ran = await bash(`bash -c "trap '' INT; echo armed; sleep 30"`, 800);
    // bash -c execs its last command, so the group's leader is `sleep`; the shell reports the kill.
    expect(ran.text).toBe(
      'armed\nTerminated\n[timed out after 800ms; sleep did not stop on SIGINT and was killed with SIGTERM; the shell kept its state]',
    );
    expect((await bash('echo $KEEP')).text).toBe('kept\n');
    // A call typed into a command that still runs times out the same way.
    expect((await bash(`bash -c "trap '' INT; sleep 30"`)).text).toMatch(/\[still running/);
    const typed = await bash('more input', 800);
    expect(typed.text).toMatch(
      /\[timed out after 800ms; sleep did not stop on SIGINT and was killed with SIGTERM; the shell kept its state\]$/,
    );
    expect((await bash('echo $KEEP')).text).toBe('kept\n');
  });
});
