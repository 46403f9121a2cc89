/** Foreground runs against a real daemon: exit facts, timeouts, cancellation, leftovers (SPEC §1.3). */
import { describe, expect, it } from 'vitest';
import { ShellRun } from '../../protocol/methods.js';
import { startDaemon, waitPidsGone } from '../helpers/daemon.js';
import { pidsIn } from '../helpers/procs.js';
import { waitFor } from '../helpers/wait.js';

describe('foreground run', () => {
  it('reports stdout and exit code 0', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const result = await client.run({ sessionId: 's1', command: 'echo hi' });
    expect(result.stdout).toEqual({ text: 'hi\n', truncated: false });
    expect(result.exitCode).toBe(0);
    expect(result.signal).toBeNull();
    expect(result.timedOut).toBe(false);
    expect(result.aborted).toBe(false);
  });

  it('reports a non-zero exit as a result, not an error', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const result = await client.run({ sessionId: 's1', command: 'echo oops >&2; exit 3' });
    expect(result.exitCode).toBe(3);
    expect(result.stderr.text).toBe('oops\n');
  });

  it('times out: SIGTERM to the tree, timedOut true, aborted false, every process gone', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const result = await client.run({ sessionId: 's1', command: 'echo $$; sleep 30 & echo $!; wait', timeoutMs: 200 });
    expect(result.timedOut).toBe(true);
    expect(result.aborted).toBe(false);
    expect(result.signal).toBe('SIGTERM');
    expect(result.exitCode).toBeNull();
    const pids = pidsIn(result.stdout.text);
    expect(pids).toHaveLength(2);
    expect(await waitPidsGone(pids, 100)).toEqual([]);
  });

  it('keeps exit code 0 of a command that traps TERM, and still says it timed out', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const result = await client.run({
      sessionId: 's1',
      command: "trap 'exit 0' TERM; sleep 30 & wait",
      timeoutMs: 200,
    });
    expect(result).toMatchObject({ exitCode: 0, signal: null, timedOut: true, aborted: false });
  });

  it('SIGKILLs a command that ignores TERM after graceMs', async () => {
    const daemon = await startDaemon({ config: { graceMs: 300 } });
    const client = await daemon.session('s1');
    const result = await client.run({ sessionId: 's1', command: "trap '' TERM; echo $$; sleep 30", timeoutMs: 200 });
    expect(result).toMatchObject({ signal: 'SIGKILL', timedOut: true, aborted: false });
    expect(result.durationMs).toBeGreaterThanOrEqual(500);
    expect(await waitPidsGone(pidsIn(result.stdout.text), 100)).toEqual([]);
  });

  it('answers a cancelled run with aborted true once its tree is gone', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const controller = new AbortController();
    let output = '';
    const running = client.run(
      { sessionId: 's1', command: 'echo $$; sleep 30 & echo $!; wait' },
      { signal: controller.signal, onOutput: ({ text }) => (output += text) },
    );
    await waitFor(() => pidsIn(output).length === 2, 'the pids to be printed');
    controller.abort();
    const result = await running;
    expect(result).toMatchObject({ aborted: true, timedOut: false, signal: 'SIGTERM' });
    expect(await waitPidsGone(pidsIn(output), 100)).toEqual([]);
  });

  it('settles about graceMs after bash exits when a descendant holds the pipes', async () => {
    const daemon = await startDaemon({ config: { graceMs: 500 } });
    const client = await daemon.session('s1');
    const result = await client.run({ sessionId: 's1', command: 'sleep 100 & echo hi' });
    expect(result.stdout.text).toBe('hi\n');
    expect(result.exitCode).toBe(0);
    expect(result.timedOut).toBe(false);
    expect(result.durationMs).toBeGreaterThanOrEqual(450);
    expect(result.durationMs).toBeLessThan(10_000);
  });

  it('writes stdin to the command and closes it; absent stdin is /dev/null', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const fed = await client.run({ sessionId: 's1', command: 'cat; echo done', stdin: 'line one\nline two\n' });
    expect(fed.stdout.text).toBe('line one\nline two\ndone\n');
    const none = await client.run({ sessionId: 's1', command: 'cat; readlink /proc/self/fd/0' });
    expect(none.stdout.text).toBe('/dev/null\n');
  });

  it('runs the command string unparsed through bash -c', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const result = await client.call(ShellRun, {
      sessionId: 's1',
      command: 'echo "$0" "$BASH_VERSION" | cut -c1-4; printf "%s|" a\\ b "c d"',
    });
    expect(result.stdout.text).toBe('bash\na b|c d|');
  });
});
