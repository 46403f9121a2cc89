/** What the model reads from the persistent bash and the terminal tools, byte for byte (SPEC §9.2). */
import { describe, expect, it } from 'vitest';
import { parseExitStatus } from '../../../shared/render.js';
import {
  RESET_LINE,
  renderPersistentResult,
  renderTerminalRead,
  renderTerminalSend,
  shellReplacedLine,
  terminalExitedLine,
  terminalStateLine,
  type PersistentRenderInput,
} from '../../../client/terminal-render.js';
import { renderTerminalList } from '../../../client/tool/terminal-tools.js';
import type { TerminalSnapshot } from '../../../protocol/terminal.js';

const RESET =
  'The persistent bash shell was reset; the next bash call starts from the workspace with a fresh current directory and environment.';

function persistent(
  output: string,
  outcome: PersistentRenderInput['outcome'],
  extra: Partial<PersistentRenderInput> = {},
) {
  return renderPersistentResult({ output, truncated: false, outcome, ...extra });
}

describe('persistent bash rendering', () => {
  it('has the spec reset line', () => {
    expect(RESET_LINE).toBe(RESET);
  });

  it('shows the output and no marker for exit 0', () => {
    expect(persistent('/tmp v\n', { state: 'completed', exitCode: 0 })).toBe('/tmp v\n');
  });

  it('shows (no output) for an empty completed command', () => {
    expect(persistent('', { state: 'completed', exitCode: 0 })).toBe('(no output)');
  });

  it('ends a non-zero exit with [exit code: N] that parseExitStatus recovers', () => {
    const text = persistent('oops\n', { state: 'completed', exitCode: 1 });
    expect(text).toBe('oops\n[exit code: 1]');
    expect(parseExitStatus(text)).toEqual({ body: 'oops', exitCode: 1 });
    expect(persistent('', { state: 'completed', exitCode: 2 })).toBe('(no output)\n[exit code: 2]');
    expect(persistent('no newline', { state: 'completed', exitCode: 3 })).toBe('no newline\n[exit code: 3]');
  });

  it('appends [exit code: 0] when the output ends with a marker lookalike', () => {
    const text = persistent('[exit code: 7]', { state: 'completed', exitCode: 0 });
    expect(text).toBe('[exit code: 7]\n[exit code: 0]');
    expect(parseExitStatus(text)).toEqual({ body: '[exit code: 7]', exitCode: 0 });
  });

  it('puts the replaced-shell line after the output and before the exit marker, naming why', () => {
    const notice = shellReplacedLine({ exitCode: null, signal: 'SIGHUP', detail: 'daemon shut down' });
    expect(notice).toBe(
      '[new shell: the previous persistent bash ended (daemon shut down); its working directory, exports and functions were lost]',
    );
    const text = persistent('Z=\n', { state: 'completed', exitCode: 1 }, { notice });
    expect(text).toBe(`Z=\n${notice}\n[exit code: 1]`);
    expect(parseExitStatus(text)).toEqual({ body: `Z=\n${notice}`, exitCode: 1 });
    expect(shellReplacedLine({ exitCode: 3, signal: null })).toContain('(exit code 3)');
    expect(shellReplacedLine({ exitCode: null, signal: 'SIGKILL' })).toContain('(killed by signal SIGKILL)');
  });

  it('names the spill file after truncated output', () => {
    expect(
      persistent('tail\n', { state: 'completed', exitCode: 0 }, { truncated: true, spillPath: '/s/term-1.out' }),
    ).toBe('tail\n\n[output truncated; full output: /s/term-1.out]');
    expect(persistent('tail', { state: 'completed', exitCode: 4 }, { truncated: true })).toBe(
      'tail\n[output truncated; full output: (unavailable)]\n[exit code: 4]',
    );
  });

  it('says a reading command waits for input and that the next call is typed into it', () => {
    expect(persistent('Name? ', { state: 'waiting_for_input' })).toBe(
      'Name? \n[waiting for input: the command is reading from the terminal; the next bash call is typed into it]',
    );
  });

  it('says a silent command still runs, naming idleMs', () => {
    expect(persistent('', { state: 'idle', idleMs: 3000 })).toBe(
      '(no output)\n[still running: no output for 3000ms; the next bash call is typed into it]',
    );
  });

  it('has both timeout forms', () => {
    expect(persistent('start\n', { state: 'timed_out', timeoutMs: 500, interrupted: true })).toBe(
      'start\n[timed out after 500ms; interrupted, the shell kept its state]',
    );
    expect(persistent('start\n', { state: 'timed_out', timeoutMs: 500, interrupted: false })).toBe(
      `start\n[timed out after 500ms]\n${RESET}`,
    );
  });

  it('has the three shell-exited lines, each followed by the reset line', () => {
    expect(persistent('', { state: 'exited', exitCode: 3, signal: null })).toBe(
      `(no output)\n[shell exited: code 3]\n${RESET}`,
    );
    expect(persistent('bye\n', { state: 'exited', exitCode: null, signal: 'SIGKILL' })).toBe(
      `bye\n[shell killed by signal: SIGKILL]\n${RESET}`,
    );
    expect(persistent('', { state: 'exited', exitCode: null, signal: null })).toBe(
      `(no output)\n[shell exited]\n${RESET}`,
    );
  });
});

describe('terminal tool rendering', () => {
  it('ends a send with its readiness line', () => {
    const send = (readiness: Parameters<typeof renderTerminalSend>[0]['readiness'], output = 'out\n') =>
      renderTerminalSend({ output, truncated: false, readiness });
    expect(send({ reason: 'prompt' })).toBe('out\n[ready: prompt]');
    expect(send({ reason: 'stdin_read' }, 'Password: ')).toBe('Password: \n[ready: waiting for input]');
    expect(send({ reason: 'inferred_idle', idleMs: 3000 })).toBe('out\n[not proven ready: no output for 3000ms]');
    expect(send({ reason: 'timeout', timeoutMs: 1500 })).toBe('out\n[timed out after 1500ms]');
    expect(send({ reason: 'session_exit', exitCode: 0, signal: null }, '')).toBe(
      '(no output)\n[terminal exited: code 0]',
    );
  });

  it('says when a send result was cut to its tail', () => {
    expect(renderTerminalSend({ output: 'tail\n', truncated: true, readiness: { reason: 'prompt' } })).toBe(
      '[output truncated to its tail; terminal_read with view "screen" shows what the screen shows now]\ntail\n[ready: prompt]',
    );
  });

  it("shows a send's exit status at the prompt as the persistent bash shows a typed command's", () => {
    const prompt = { reason: 'prompt' } as const;
    expect(renderTerminalSend({ output: 'out\n', truncated: false, readiness: prompt, exitCode: 0 })).toBe(
      'out\n[ready: prompt]',
    );
    expect(renderTerminalSend({ output: 'out\n', truncated: false, readiness: prompt, exitCode: 3 })).toBe(
      'out\n[exit code: 3]\n[ready: prompt]',
    );
    expect(renderTerminalSend({ output: '', truncated: false, readiness: prompt, exitCode: 1 })).toBe(
      '(no output)\n[exit code: 1]\n[ready: prompt]',
    );
    // Only a prompt proves the command line ended.
    expect(
      renderTerminalSend({ output: 'out\n', truncated: false, readiness: { reason: 'stdin_read' }, exitCode: 3 }),
    ).toBe('out\n[ready: waiting for input]');
  });

  it("shows what a terminal's limits did before the readiness line", () => {
    expect(
      renderTerminalSend({
        output: 'Killed\n',
        truncated: false,
        readiness: { reason: 'prompt' },
        exitCode: 137,
        limits: { oomKilled: true, oomLimitBytes: 64 * 1024 * 1024, pidsLimitReached: 32 },
      }),
    ).toBe(
      'Killed\n[limit: process count 32 reached]\n[killed: out of memory (limit 64 MiB)]\n[exit code: 137]\n[ready: prompt]',
    );
    expect(
      renderTerminalSend({
        output: 'x\n',
        truncated: false,
        readiness: { reason: 'inferred_idle', idleMs: 700 },
        limits: { oomKilled: true },
      }),
    ).toBe('x\n[killed: out of memory]\n[not proven ready: no output for 700ms]');
  });

  it('tells how a terminal exited', () => {
    expect(terminalExitedLine({ exitCode: null, signal: 'SIGTERM' })).toBe(
      '[terminal exited: killed by signal SIGTERM]',
    );
    expect(
      terminalExitedLine({ exitCode: null, signal: null, detail: 'daemon restarted while the terminal was open' }),
    ).toBe('[terminal exited: daemon restarted while the terminal was open]');
    expect(terminalExitedLine({ exitCode: 1, signal: null, detail: 'closed' })).toBe(
      '[terminal exited: code 1 (closed)]',
    );
  });

  const snapshot: TerminalSnapshot = {
    id: 'term-2',
    ownerSession: 's',
    argv: ['bash', '--noprofile', '--norc', '-i'],
    cwd: '/w',
    pid: 100,
    cols: 80,
    rows: 24,
    status: 'running',
    exitCode: null,
    signal: null,
    busy: false,
    startedAt: '2026-01-01T00:00:00.000Z',
    outputBytes: 10,
  };

  it('names the foreground program in the state line when a command runs', () => {
    expect(terminalStateLine(snapshot)).toBe('[terminal term-2: running]');
    expect(terminalStateLine({ ...snapshot, foreground: { pgid: 200, command: 'python3' } })).toBe(
      '[terminal term-2: running python3]',
    );
  });

  it('renders reads: new output, nothing new, dropped bytes, the screen', () => {
    const read = (view: 'stream' | 'screen', text: string, droppedBytes = 0) =>
      renderTerminalRead({ view, text, droppedBytes, terminal: snapshot });
    expect(read('stream', 'hi\n')).toBe('hi\n[terminal term-2: running]');
    expect(read('stream', '')).toBe('(no new output)\n[terminal term-2: running]');
    expect(read('stream', 'x', 5)).toBe(
      '[5 bytes of earlier output are no longer held by the terminal]\nx\n[terminal term-2: running]',
    );
    expect(read('screen', 'line 1\nline 2')).toBe('line 1\nline 2\n[terminal term-2: running]');
    expect(read('screen', '   \n  ')).toBe('(blank screen)\n[terminal term-2: running]');
  });

  it('lists terminals as a table', () => {
    expect(renderTerminalList([])).toBe('(no terminals)');
    expect(
      renderTerminalList([
        { ...snapshot, name: 'repl', foreground: { pgid: 9, command: 'python3' } },
        { ...snapshot, id: 'term-3', status: 'exited', exitCode: 0 },
      ]),
    ).toBe(
      [
        'id      state                    program                     cwd  name',
        'term-2  running                  python3                     /w   repl',
        'term-3  terminal exited: code 0  bash --noprofile --norc -i  /w',
      ].join('\n'),
    );
  });
});
