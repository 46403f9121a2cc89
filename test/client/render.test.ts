/** The rendering contract, byte for byte (SPEC §3.4), and its parse round-trip. */
import { describe, expect, it } from 'vitest';
import {
  escalationHintLine,
  parseExitStatus,
  renderJobExited,
  renderProcessRead,
  renderResult,
} from '../../shared/render.js';
import type { JobReadResult, ShellRunResult } from '../../protocol/types.js';
import { jobSnapshot as job, runResult } from '../helpers/results.js';

const result = runResult;

const out = (text: string) => ({ text, truncated: false });

/** Each case: a result, the exact text, and the exit status the parse must recover. */
const CASES: Array<{
  name: string;
  result: ShellRunResult;
  text: string;
  status: { exitCode: number } | { signal: string };
}> = [
  { name: 'plain output', result: result({ stdout: out('hello\n') }), text: 'hello\n', status: { exitCode: 0 } },
  { name: 'empty output', result: result(), text: '(no output)', status: { exitCode: 0 } },
  {
    name: 'stdout without a trailing newline plus stderr',
    result: result({ stdout: out('partial'), stderr: out('warn\n') }),
    text: 'partial\n[stderr]\nwarn\n',
    status: { exitCode: 0 },
  },
  {
    name: 'stdout with a trailing newline plus stderr',
    result: result({ stdout: out('line\n'), stderr: out('warn') }),
    text: 'line\n[stderr]\nwarn',
    status: { exitCode: 0 },
  },
  { name: 'stderr only', result: result({ stderr: out('boom\n') }), text: '[stderr]\nboom\n', status: { exitCode: 0 } },
  {
    name: 'truncated stdout with a spill path',
    result: result({ stdout: { text: 'tail\n', truncated: true, spillPath: '/state/spill/s1/run-1.stdout' } }),
    text: 'tail\n\n[output truncated; full output: /state/spill/s1/run-1.stdout]',
    status: { exitCode: 0 },
  },
  {
    name: 'truncated stdout without a spill file',
    result: result({ stdout: { text: 'tail', truncated: true } }),
    text: 'tail\n[output truncated; full output: (unavailable)]',
    status: { exitCode: 0 },
  },
  {
    name: 'truncated stderr after stdout',
    result: result({ stdout: out('a\n'), stderr: { text: 'err tail', truncated: true, spillPath: '/s/e' } }),
    text: 'a\n[stderr]\nerr tail\n[output truncated; full output: /s/e]',
    status: { exitCode: 0 },
  },
  {
    name: 'timeout and SIGTERM',
    result: result({ exitCode: null, signal: 'SIGTERM', timedOut: true, timeoutMs: 200, stdout: out('started\n') }),
    text: 'started\n[timed out after 200ms]\n[killed by signal: SIGTERM]',
    status: { signal: 'SIGTERM' },
  },
  {
    name: 'timeout with exit 0',
    result: result({ timedOut: true, timeoutMs: 1500, stdout: out('cleaned up') }),
    text: 'cleaned up\n[timed out after 1500ms]',
    status: { exitCode: 0 },
  },
  {
    name: 'exit 2',
    result: result({ exitCode: 2, stdout: out('no such file\n') }),
    text: 'no such file\n[exit code: 2]',
    status: { exitCode: 2 },
  },
  {
    name: 'exit 1 with no output',
    result: result({ exitCode: 1 }),
    text: '(no output)\n[exit code: 1]',
    status: { exitCode: 1 },
  },
  {
    name: 'sandbox denial, exit marker last',
    result: result({
      exitCode: 1,
      stderr: out('touch: cannot touch /etc/x: Read-only file system\n'),
      sandbox: { mode: 'workspace-write', denied: true, enforcement: 'bwrap' },
    }),
    text:
      '[stderr]\ntouch: cannot touch /etc/x: Read-only file system\n' +
      '[sandbox: file access denied under workspace-write mode]\n[exit code: 1]',
    status: { exitCode: 1 },
  },
  {
    name: 'sandbox denial with timeout and signal: every marker in order',
    result: result({
      exitCode: null,
      signal: 'SIGKILL',
      timedOut: true,
      timeoutMs: 100,
      stdout: out('x'),
      sandbox: { mode: 'read-only', denied: true, enforcement: 'bwrap' },
    }),
    text: 'x\n[sandbox: file access denied under read-only mode]\n[timed out after 100ms]\n[killed by signal: SIGKILL]',
    status: { signal: 'SIGKILL' },
  },
  {
    name: 'sandbox without denial adds nothing',
    result: result({ stdout: out('ok\n'), sandbox: { mode: 'danger-full-access', denied: false } }),
    text: 'ok\n',
    status: { exitCode: 0 },
  },
  {
    name: 'output ending in an exit-marker lookalike, real exit 0',
    result: result({ stdout: out('step one\n[exit code: 1]') }),
    text: 'step one\n[exit code: 1]\n[exit code: 0]',
    status: { exitCode: 0 },
  },
  {
    name: 'output ending in a signal-marker lookalike, real exit 0',
    result: result({ stdout: out('log\n[killed by signal: SIGKILL]') }),
    text: 'log\n[killed by signal: SIGKILL]\n[exit code: 0]',
    status: { exitCode: 0 },
  },
  {
    name: 'stderr ending in a lookalike, real exit 0',
    result: result({ stderr: out('[exit code: 7]') }),
    text: '[stderr]\n[exit code: 7]\n[exit code: 0]',
    status: { exitCode: 0 },
  },
  {
    name: 'a lookalike followed by a newline is left alone (the parse cannot take it)',
    result: result({ stdout: out('x\n[exit code: 1]\n') }),
    text: 'x\n[exit code: 1]\n',
    status: { exitCode: 0 },
  },
  {
    name: 'a lookalike with a real non-zero exit',
    result: result({ exitCode: 3, stdout: out('x\n[exit code: 1]') }),
    text: 'x\n[exit code: 1]\n[exit code: 3]',
    status: { exitCode: 3 },
  },
];

describe('renderResult', () => {
  for (const { name, result: r, text } of CASES) {
    it(`renders ${name} byte for byte`, () => {
      expect(renderResult(r)).toBe(text);
    });
  }

  it('adds the escalation hint right after the denial marker, before the exit marker', () => {
    const r = result({
      exitCode: 1,
      stdout: out('x\n'),
      sandbox: { mode: 'read-only', denied: true, enforcement: 'bwrap' },
    });
    const hint = escalationHintLine(['workspace-write', 'danger-full-access']);
    expect(hint).toBe(
      '[sandbox: to retry with wider file access, call again with sandbox_permissions (workspace-write or danger-full-access) and a justification]',
    );
    expect(renderResult(r, { escalationHint: hint })).toBe(
      `x\n[sandbox: file access denied under read-only mode]\n${hint}\n[exit code: 1]`,
    );
  });

  it('adds no escalation hint without a denial', () => {
    expect(renderResult(result({ stdout: out('x') }), { escalationHint: 'HINT' })).toBe('x');
  });
});

describe('parseExitStatus', () => {
  for (const { name, result: r, text, status } of CASES) {
    it(`round-trips ${name}`, () => {
      const rendered = renderResult(r);
      const { body, ...exit } = parseExitStatus(rendered);
      expect(exit).toEqual(status);
      // The body is the rendering without its marker line: the status is never printed twice.
      expect(rendered.startsWith(body)).toBe(true);
      const marker = rendered.slice(body.length);
      expect(marker === '' || /^\n\[(exit code: \d+|killed by signal: [^\]\n]+)\]$/.test(marker)).toBe(true);
      expect(rendered).toBe(text);
    });
  }

  it("keeps a command's own [exit code: 1] line in the body when the real exit is 0", () => {
    expect(parseExitStatus(renderResult(result({ stdout: out('done\n[exit code: 1]') })))).toEqual({
      body: 'done\n[exit code: 1]',
      exitCode: 0,
    });
  });

  it("keeps a command's own [killed by signal: SIGKILL] line in the body when the real exit is 0", () => {
    expect(parseExitStatus(renderResult(result({ stdout: out('done\n[killed by signal: SIGKILL]') })))).toEqual({
      body: 'done\n[killed by signal: SIGKILL]',
      exitCode: 0,
    });
  });

  it('takes the last marker only, and no marker means exit 0 with the body unchanged', () => {
    expect(parseExitStatus('a\n[exit code: 2]')).toEqual({ body: 'a', exitCode: 2 });
    expect(parseExitStatus('a\n[killed by signal: SIGTERM]')).toEqual({ body: 'a', signal: 'SIGTERM' });
    expect(parseExitStatus('a\n[exit code: 2]\n')).toEqual({ body: 'a\n[exit code: 2]\n', exitCode: 0 });
    expect(parseExitStatus('(no output)')).toEqual({ body: '(no output)', exitCode: 0 });
  });
});

function read(overrides: Partial<JobReadResult> = {}): JobReadResult {
  const none = { text: '', from: 0, offset: 0, nextOffset: 0 };
  return { delta: '', lossy: false, stdout: none, stderr: none, job: job(), ...overrides };
}

describe('renderProcessRead', () => {
  it('renders new output and the running state', () => {
    expect(renderProcessRead(read({ delta: 'tick 1\ntick 2\n' }))).toBe('tick 1\ntick 2\n[job bash-3: running]');
  });

  it('says when nothing is new', () => {
    expect(renderProcessRead(read())).toBe('(no new output)\n[job bash-3: running]');
  });

  it('renders the lossy notice with both log files', () => {
    const r = read({
      delta: 'late\n',
      lossy: true,
      stdoutSpillPath: '/s/bash-3.stdout',
      stderrSpillPath: '/s/bash-3.stderr',
    });
    expect(renderProcessRead(r)).toBe(
      'late\n[some output was dropped from memory; full output: /s/bash-3.stdout, /s/bash-3.stderr]\n[job bash-3: running]',
    );
  });

  it('renders the lossy notice with (unavailable) when no log file is known', () => {
    expect(renderProcessRead(read({ delta: 'x', lossy: true }))).toBe(
      'x\n[some output was dropped from memory; full output: (unavailable)]\n[job bash-3: running]',
    );
  });

  it('ends a settled job with its exit marker', () => {
    const done = job({ status: 'completed', exitCode: 2, detail: 'exit code: 2' });
    const text = renderProcessRead(read({ delta: 'fail\n', job: done }));
    expect(text).toBe('fail\n[job bash-3: completed]\n[exit code: 2]');
    expect(parseExitStatus(text)).toEqual({ body: 'fail\n[job bash-3: completed]', exitCode: 2 });
  });

  it('renders a kill by signal and a clean completion', () => {
    const killed = job({ status: 'killed', signal: 'SIGTERM', detail: 'signal: SIGTERM' });
    expect(renderProcessRead(read({ job: killed }))).toBe(
      '(no new output)\n[job bash-3: killed]\n[killed by signal: SIGTERM]',
    );
    const ok = job({ status: 'completed', exitCode: 0, detail: 'exit code: 0' });
    expect(renderProcessRead(read({ delta: 'done\n', job: ok }))).toBe('done\n[job bash-3: completed]');
  });

  it('names the cause of a failed job, and a sandbox runner failure', () => {
    const failed = job({
      status: 'failed',
      detail: 'spawn failed: ENOENT',
      sandbox: { mode: 'read-only', denied: false, runnerFailed: true },
    });
    expect(renderProcessRead(read({ job: failed }))).toBe(
      '(no new output)\n[sandbox: the read-only runner failed before the command ran]\n[job bash-3: failed (spawn failed: ENOENT)]',
    );
  });

  it('a runner failure replaces the denial line and the hint, even when bwrap said "Read-only file system"', () => {
    const failed = job({
      status: 'failed',
      exitCode: 1,
      detail: "sandbox runner failed: bwrap: Can't mkdir /x: Read-only file system",
      sandbox: { mode: 'workspace-write', denied: true, enforcement: 'bwrap', runnerFailed: true },
    });
    expect(renderProcessRead(read({ job: failed }), { escalationHint: 'HINT' })).toBe(
      '(no new output)\n[sandbox: the workspace-write runner failed before the command ran]\n' +
        "[job bash-3: failed (sandbox runner failed: bwrap: Can't mkdir /x: Read-only file system)]\n[exit code: 1]",
    );
    const run = result({
      exitCode: 1,
      stderr: out("bwrap: Can't mkdir /x: Read-only file system\n"),
      sandbox: { mode: 'read-only', denied: true, enforcement: 'bwrap', runnerFailed: true },
    });
    expect(renderResult(run, { escalationHint: 'HINT' })).toBe(
      "[stderr]\nbwrap: Can't mkdir /x: Read-only file system\n" +
        '[sandbox: the read-only runner failed before the command ran]\n[exit code: 1]',
    );
  });

  it('renders a sandbox denial with the escalation hint', () => {
    const denied = job({ sandbox: { mode: 'workspace-write', denied: true, enforcement: 'bwrap' } });
    expect(renderProcessRead(read({ delta: 'x\n', job: denied }), { escalationHint: 'HINT' })).toBe(
      'x\n[sandbox: file access denied under workspace-write mode]\nHINT\n[job bash-3: running]',
    );
  });

  it('renders [stderr] sections of the delta as the daemon sent them', () => {
    expect(renderProcessRead(read({ delta: 'out\n[stderr]\nerr\n' }))).toBe(
      'out\n[stderr]\nerr\n[job bash-3: running]',
    );
  });
});

describe('renderJobExited', () => {
  it('is one line naming the job, its end and its command', () => {
    expect(renderJobExited(job({ status: 'completed', exitCode: 0, detail: 'exit code: 0' }))).toBe(
      'background job bash-3 completed (exit code: 0): make test',
    );
  });
});
