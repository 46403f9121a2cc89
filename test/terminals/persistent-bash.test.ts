/** The persistent `bash` (createShellTools persistent: true) end to end through a real daemon and a real PTY (SPEC §9.2). */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseExitStatus } from '../../shared/render.js';
import { RESET_LINE, WAITING_FOR_INPUT_LINE, stillRunningLine } from '../../client/terminal-render.js';
import { createShellTools } from '../../client/tool/index.js';
import { TerminalList, TerminalRead } from '../../protocol/methods.js';
import { startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';

const IDLE_MS = 800;

async function persistentBash(daemon: TestDaemon, sessionId = 'agent', cwd = join(daemon.dir, 'ws'), idleMs = IDLE_MS) {
  mkdirSync(cwd, { recursive: true });
  const client = await daemon.connect();
  const tools = await createShellTools({ client, session: { id: sessionId, cwd }, persistent: true, idleMs });
  const shell = tools.shell;
  const bash = (command: string, timeoutMs?: number) =>
    shell.execute({ command, description: 'A step of the test', ...(timeoutMs ? { timeoutMs } : {}) });
  return { client, tools, shell, bash, cwd };
}

/** Whether the session's terminal has a command in its foreground, seen from a client of its own. */
async function daemonForeground(daemon: TestDaemon): Promise<boolean> {
  const client = await daemon.session('agent', join(daemon.dir, 'ws'));
  const [terminal] = await client.call(TerminalList, { sessionId: 'agent' });
  client.close();
  return terminal?.foreground !== undefined;
}

describe('the persistent bash through a real daemon', { timeout: 60_000 }, () => {
  it('keeps cd and export between calls, in one terminal, and registers only bash', async () => {
    const daemon = await startDaemon();
    const { tools, shell, bash, client } = await persistentBash(daemon);
    expect(tools.tools.map((tool) => tool.name)).toEqual(['bash']);
    expect(tools.shell.description.startsWith('Run commands in a persistent bash shell.')).toBe(true);
    expect(Object.keys(tools.shell.inputSchema.properties as object)).toEqual(['command', 'description', 'timeoutMs']);
    expect(await bash('cd /tmp; export K=v')).toMatchObject({ text: '(no output)', isError: false });
    expect(await bash('echo "$PWD $K"')).toMatchObject({ text: '/tmp v\n', isError: false });
    const terminals = await client.call(TerminalList, { sessionId: 'agent' });
    expect(terminals.map((terminal) => terminal.id)).toEqual([shell.terminalId()]);
  });

  it('reports a non-zero exit with the marker parseExitStatus reads; PS1 and heredocs do not break it', async () => {
    const daemon = await startDaemon();
    const { bash } = await persistentBash(daemon);
    const failed = await bash('false');
    expect(failed.text).toBe('(no output)\n[exit code: 1]');
    expect(parseExitStatus(failed.text)).toEqual({ body: '(no output)', exitCode: 1 });
    expect((await bash('PS1=x; echo set')).text).toBe('set\n');
    expect((await bash("cat <<'EOF'\nline one\nline two\nEOF")).text).toBe('line one\nline two\n');
  });

  it('after exit 3 says so with the reset line, and the next call starts fresh in the workspace', async () => {
    const daemon = await startDaemon();
    const { bash, cwd, shell } = await persistentBash(daemon);
    await bash('cd /tmp; export K=v');
    const first = shell.terminalId();
    // An interactive bash says `exit` on its way out: that is what the terminal printed.
    expect((await bash('exit 3')).text).toBe(`exit\n[shell exited: code 3]\n${RESET_LINE}`);
    expect(shell.terminalId()).toBeUndefined();
    expect((await bash('echo "$PWD [$K]"')).text).toBe(`${cwd} []\n`);
    expect(shell.terminalId()).not.toBe(first);
  });

  it('types the next call into a command that waits for input', async () => {
    const daemon = await startDaemon();
    const { bash } = await persistentBash(daemon);
    const waiting = await bash('read -p "Name? " x; echo "hello $x"');
    expect(waiting.text).toBe(`Name? \n${WAITING_FOR_INPUT_LINE}`);
    const answered = await bash('world');
    expect(answered.text).toContain('hello world');
    expect(answered.text).not.toContain('[waiting for input');
    // Back at the prompt: the next call runs a command again, with its exit code.
    expect((await bash('false')).text).toBe('(no output)\n[exit code: 1]');
  });

  it('answers a python input() the same way', async () => {
    const daemon = await startDaemon();
    // The answer comes when python blocks reading the terminal; a loaded machine may take longer
    // than IDLE_MS to start python, so the idle window here is wider than that.
    const { bash } = await persistentBash(daemon, 'agent', join(daemon.dir, 'ws'), 10_000);
    const waiting = await bash(`python3 -c 'print(input()[::-1])'`);
    expect(waiting.text.endsWith(WAITING_FOR_INPUT_LINE)).toBe(true);
    expect((await bash('abc')).text).toContain('cba');
  });

  it('says a silent command is still running, then types the next call into it', async () => {
    const daemon = await startDaemon();
    const { bash, client, shell, cwd } = await persistentBash(daemon);
    const running = await bash('while [ ! -e go ]; do sleep 0.05; done; echo slept');
    expect(running.text).toBe(`(no output)\n${stillRunningLine(IDLE_MS)}`);
    const typed = bash('echo after');
    // Once the typed line is in the terminal (echoed), let the loop end: bash then runs that line.
    await waitFor(async () => {
      const read = await client.call(TerminalRead, { sessionId: 'agent', terminalId: shell.terminalId()!, offset: 0 });
      return read.text.includes('echo after');
    }, 'the typed line to be echoed');
    writeFileSync(join(cwd, 'go'), '');
    const next = await typed;
    expect(next.text).toContain('slept\n');
    expect(next.text).not.toContain('\x1b');
    expect((await bash('echo again')).text).toBe('again\n');
  });

  it('includes what a running command printed between calls, also when it ended meanwhile', async () => {
    const daemon = await startDaemon();
    const { bash, cwd } = await persistentBash(daemon);
    const running = await bash('while [ ! -e go ]; do sleep 0.05; done; echo slept');
    expect(running.text).toBe(`(no output)\n${stillRunningLine(IDLE_MS)}`);
    writeFileSync(join(cwd, 'go'), '');
    await waitFor(async () => !(await daemonForeground(daemon)), 'the loop to end');
    // The shell is back at its prompt: the typed line runs as a command, after what the loop printed.
    const next = await bash('echo typed');
    expect(next.text).toMatch(/^slept\n[^]*typed\n/);
    expect((await bash('false')).text).toBe('(no output)\n[exit code: 1]');
  });

  it('keeps the tail of a long output printed between calls, marked as cut', async () => {
    const daemon = await startDaemon({ config: { maxOutputBytes: 10_000 } });
    const { bash, cwd, client, shell } = await persistentBash(daemon);
    const running = await bash('while [ ! -e go ]; do sleep 0.05; done; seq 1 30000; read x');
    expect(running.text).toBe(`(no output)\n${stillRunningLine(IDLE_MS)}`);
    writeFileSync(join(cwd, 'go'), '');
    await waitFor(async () => {
      const read = await client.call(TerminalRead, { sessionId: 'agent', terminalId: shell.terminalId()! });
      return read.text.includes('30000\n');
    }, 'seq to finish');
    const next = await bash('y');
    expect(next.text).toContain('29999\n30000\n');
    expect(next.text).not.toContain('\n2\n3\n4\n');
    expect(next.text.endsWith('\n[output truncated; full output: (unavailable)]')).toBe(true);
  });

  it('interrupts a command at its timeout and keeps the shell state', async () => {
    const daemon = await startDaemon({ config: { graceMs: 1000 } });
    const { bash } = await persistentBash(daemon);
    await bash('export K=kept');
    const timedOut = await bash('echo start; sleep 30', 600);
    // bash ends the interrupted command's line itself, hence one or two newlines.
    expect(timedOut.text).toMatch(/^start\n+\[timed out after 600ms; interrupted, the shell kept its state\]$/);
    expect((await bash('echo $K')).text).toBe('kept\n');
  });

  it('resets the shell when the shell itself does not return to its prompt at a timeout', async () => {
    const daemon = await startDaemon({ config: { graceMs: 500 } });
    const { bash, shell } = await persistentBash(daemon);
    await bash('export K=lost');
    // A loop of builtins that ignores INT runs in the shell itself: only closing the terminal ends it.
    const timedOut = await bash(`trap '' INT; while :; do :; done`, 600);
    expect(timedOut.text).toBe(`(no output)\n[timed out after 600ms]\n${RESET_LINE}`);
    expect(shell.terminalId()).toBeUndefined();
    expect((await bash('echo "[$K]"')).text).toBe('[]\n');
  });

  it('aborting a call interrupts the command, raises the abort error, and the shell goes on', async () => {
    const daemon = await startDaemon();
    const { bash, shell } = await persistentBash(daemon);
    await bash('export K=survives');
    const controller = new AbortController();
    const call = shell.execute(
      { command: 'sleep 30', description: 'Sleep until aborted' },
      { signal: controller.signal },
    );
    await waitFor(async () => await daemonForeground(daemon), 'sleep to hold the terminal');
    controller.abort();
    await expect(call).rejects.toMatchObject({ name: 'AbortError' });
    expect((await bash('echo "$K"')).text).toBe('survives\n');
  });

  it('runs concurrent calls one after the other in the same shell', async () => {
    const daemon = await startDaemon();
    const { bash } = await persistentBash(daemon);
    const [a, b] = await Promise.all([bash('export N=1; echo a'), bash('echo "b $N"')]);
    expect(a.text).toBe('a\n');
    expect(b.text).toBe('b 1\n');
  });

  it('names the spill file of a long output, which holds all of it', async () => {
    const daemon = await startDaemon({ config: { maxOutputBytes: 10_000 } });
    const { bash } = await persistentBash(daemon);
    const result = await bash('seq 1 20000');
    const match = /\n\[output truncated; full output: (.+)\]$/.exec(result.text);
    expect(match).not.toBeNull();
    const whole = readFileSync(match![1]!, 'utf8');
    expect(whole.split('\n').filter(Boolean)).toHaveLength(20000);
    expect(result.text).toContain('19999\n20000\n');
    expect(result.text).not.toContain('\n1\n2\n3\n');
  });

  it('refuses bad arguments without opening a shell', async () => {
    const daemon = await startDaemon();
    const { shell, client } = await persistentBash(daemon);
    expect(await shell.execute({ command: 'ls', description: 'x', workdir: 'src' })).toMatchObject({
      isError: true,
      text: 'invalid workdir: the persistent bash shell keeps its own working directory; use cd in the command',
    });
    expect(await shell.execute({ command: '', description: 'x' })).toMatchObject({
      isError: true,
      text: 'invalid command: expected a non-empty string',
    });
    expect(await client.call(TerminalList, { sessionId: 'agent' })).toEqual([]);
  });

  it('finds the shell of a restarted harness again, with its state', async () => {
    const daemon = await startDaemon();
    const first = await persistentBash(daemon);
    await first.bash('cd /tmp; export K=again');
    first.client.close();
    const second = await persistentBash(daemon);
    expect((await second.bash('echo "$PWD $K"')).text).toBe('/tmp again\n');
  });
});
