/** stdout and stderr written straight into their capture files by the child, through a real daemon (SPEC §1.5). */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startDaemon, waitPidsGone } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';

const seq = (n: number) => Array.from({ length: n }, (_, i) => `${i + 1}\n`).join('');

describe('direct capture', () => {
  it('keeps the exact tail of a stream far past maxSpillBytes and leaves no file', async () => {
    const daemon = await startDaemon({ config: { maxOutputBytes: 1000, maxSpillBytes: 1_000_000 } });
    const client = await daemon.session('s1');
    const result = await client.run({ sessionId: 's1', command: 'seq 1 3000000' });
    expect(result.exitCode).toBe(0);
    expect(result.stdout.truncated).toBe(true);
    expect(result.stdout).not.toHaveProperty('spillPath');
    const lastLines = Array.from({ length: 200 }, (_, i) => `${3000000 - 199 + i}\n`).join('');
    expect(result.stdout.text).toBe(lastLines.slice(-1000));
    const dir = join(daemon.stateDir, 'spill', 's1');
    expect(existsSync(dir) ? readdirSync(dir) : []).toEqual([]);
  });

  it('gives a plain run its capture files as stdout and stderr, and a streamed run pipes', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const fds = 'readlink /proc/self/fd/1 /proc/self/fd/2';
    const plain = await client.run({ sessionId: 's1', command: fds });
    const [out, err] = plain.stdout.text.trim().split('\n');
    expect(out).toMatch(/\/spill\/s1\/run-.*\.stdout$/);
    expect(err).toMatch(/\/spill\/s1\/run-.*\.stderr$/);
    const streamed = await client.run({ sessionId: 's1', command: fds }, { onOutput: () => {} });
    expect(streamed.stdout.text).toMatch(/^(pipe|socket):\[\d+\]\n(pipe|socket):\[\d+\]\n$/);
  });

  it('keeps a long stderr complete from byte 0 in its spill file, and the tail in the result', async () => {
    const daemon = await startDaemon({ config: { maxOutputBytes: 1000 } });
    const client = await daemon.session('s1');
    const result = await client.run({ sessionId: 's1', command: 'seq 1 5000 >&2' });
    expect(result.stderr.truncated).toBe(true);
    expect(result.stderr.text).toBe(seq(5000).slice(-1000));
    expect(readFileSync(result.stderr.spillPath!, 'utf8')).toBe(seq(5000));
  });

  it('leaves no file behind for output that fits in memory', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const result = await client.run({ sessionId: 's1', command: 'echo hello; echo oops >&2' });
    expect(result.stdout).toEqual({ text: 'hello\n', truncated: false });
    expect(result.stderr).toEqual({ text: 'oops\n', truncated: false });
    const dir = join(daemon.stateDir, 'spill', 's1');
    expect(existsSync(dir) ? readdirSync(dir) : []).toEqual([]);
  });

  it('keeps a reported spill file at the answered output while a leftover writes on', async () => {
    const daemon = await startDaemon({ config: { maxOutputBytes: 100, graceMs: 300 } });
    const client = await daemon.session('s1');
    const result = await client.run({
      sessionId: 's1',
      command: 'seq 1 3000; (sleep 1; echo late; echo $BASHPID > leftover.pid) &',
    });
    expect(result.stdout.truncated).toBe(true);
    const spill = result.stdout.spillPath!;
    expect(readFileSync(spill, 'utf8')).toBe(seq(3000));
    const pidFile = join(daemon.dir, 'leftover.pid');
    await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '', 'the leftover to write');
    expect(await waitPidsGone([Number(readFileSync(pidFile, 'utf8'))])).toEqual([]);
    await waitFor(
      () => statSync(spill).size === seq(3000).length,
      'the spill file to be cut back to the answered output',
    );
    expect(readFileSync(spill, 'utf8')).toBe(seq(3000));
  });
});
