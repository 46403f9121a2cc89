/**
 * Descriptors inherited by the daemon never reach a command (issue 27, points 7 and 14): a daemon
 * started — in the foreground or with `serve --detach` — from a shell holding fd 200 open on a host
 * file closes it at start, so a read-only run, a terminal and a job cannot write that file, and a
 * command sees only fds 0–2 (and the one `ls` opens on `/proc/self/fd`).
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isInheritable } from '../../daemon/host/inherited-fds.js';
import { JobRead, JobWait, SessionOpen, ShellStart, TerminalOpen, TerminalRun } from '../../protocol/methods.js';
import { CLI, startDaemon } from '../helpers/daemon.js';
import { cliWorld } from '../helpers/cli.js';

/** Tries to write fd 200, then lists the command's descriptors, one per line. */
const PROBE = 'echo leaked >&200; ls -1 /proc/self/fd';

/** The descriptors a probe listed. */
const fdsOf = (text: string) =>
  text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => /^\d+$/.test(line))
    .map(Number);

describe('inherited descriptors', () => {
  it('a foreground daemon closes fd 200 of its shell: no run, terminal or job can write it', async () => {
    const first = await startDaemon();
    const hostFile = join(first.dir, 'host-file');
    writeFileSync(hostFile, '');
    await first.stop();
    const daemon = await startDaemon({
      stateDir: first.stateDir,
      socketPath: first.socketPath,
      launcher: ['bash', '-c', 'exec 200>>"$0"; exec "$@"', hostFile],
    });
    const client = await daemon.connect();
    await client.call(SessionOpen, { sessionId: 'ro', cwd: daemon.dir, sandbox: { mode: 'read-only' } });
    await client.call(SessionOpen, { sessionId: 'open', cwd: daemon.dir });

    const confined = await client.run({ sessionId: 'ro', command: PROBE });
    const open = await client.run({ sessionId: 'open', command: PROBE });
    const { jobId } = await client.call(ShellStart, { sessionId: 'ro', command: PROBE });
    await client.call(JobWait, { sessionId: 'ro', jobId, timeoutMs: 20_000 });
    const job = await client.call(JobRead, { sessionId: 'ro', jobId });
    const { terminal } = await client.call(TerminalOpen, { sessionId: 'ro' });
    const inTerminal = await client.call(TerminalRun, { sessionId: 'ro', terminalId: terminal.id, command: PROBE });

    const listed = {
      run: fdsOf(confined.stdout.text),
      unconfined: fdsOf(open.stdout.text),
      job: fdsOf(job.delta),
      terminal: fdsOf(inTerminal.output),
    };
    console.log(`descriptors seen by commands of a daemon started holding fd 200: ${JSON.stringify(listed)}`);
    expect(readFileSync(hostFile, 'utf8')).toBe('');
    expect(confined.stderr.text).toContain('Bad file descriptor');
    // ls opens one descriptor of its own on the directory it lists.
    for (const fds of Object.values(listed)) expect(fds).toEqual([0, 1, 2, 3]);
    expect(daemon.stderr()).toContain('closed descriptors inherited from the parent');
  });

  it('a daemon started with serve --detach from a shell holding fd 200 does not pass it on', async () => {
    const world = cliWorld();
    const hostFile = join(world.dir, 'host-file');
    writeFileSync(hostFile, '');
    const detach = spawn(
      'bash',
      ['-c', 'exec 200>>"$0"; exec "$@"', hostFile, process.execPath, CLI, 'serve', '--detach'],
      {
        env: world.env,
        stdio: 'ignore',
      },
    );
    const code = await new Promise((resolve) => detach.once('exit', resolve));
    expect(code).toBe(0);
    const result = await world.run(['run', '--', PROBE]);
    console.log(`descriptors seen by a command of a detached daemon: ${JSON.stringify(fdsOf(result.stdout))}`);
    expect(readFileSync(hostFile, 'utf8')).toBe('');
    expect(fdsOf(result.stdout)).toEqual([0, 1, 2, 3]);
  });

  it('tells an inherited descriptor from a close-on-exec one by its fdinfo flags', () => {
    expect(isInheritable('pos:\t0\nflags:\t0100001\nmnt_id:\t26\n')).toBe(true);
    expect(isInheritable('pos:\t0\nflags:\t02004000\nmnt_id:\t15\n')).toBe(false);
    expect(isInheritable('garbage')).toBe(false);
  });
});
