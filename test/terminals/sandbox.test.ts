/**
 * A terminal in a confined mode (SPEC §9.1, §6, §15) against a real daemon, once per runner
 * (bubblewrap and Landlock): the shell runs inside the same sandbox as a one-shot command, and
 * closing the terminal leaves nothing behind.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, onTestFinished, test } from 'vitest';
import { TerminalClose, TerminalOpen, TerminalRun } from '../../protocol/methods.js';
import { waitPidsGone } from '../helpers/daemon.js';
import { pidsWithArgument } from '../helpers/procs.js';
import { BACKENDS, sandboxedSession, uniqueSleep } from '../helpers/sandbox.js';
import { waitFor } from '../helpers/wait.js';

describe.each(BACKENDS)('confined terminal under $name', (backend) => {
  test('workspace-write: writes only the workspace, cannot read the token or reach the socket', async () => {
    const { daemon, client, workspace } = await sandboxedSession(
      { mode: 'workspace-write' },
      { config: { graceMs: 500, ...backend.config } },
    );
    const sessionId = 's1';
    const opened = await client.call(TerminalOpen, { sessionId });
    const terminalId = opened.terminal.id;
    const run = (command: string) => client.call(TerminalRun, { sessionId, terminalId, command });

    expect(await run('echo inside > in.txt && cat in.txt')).toMatchObject({ exitCode: 0, output: 'inside\n' });
    expect(readFileSync(join(workspace, 'in.txt'), 'utf8')).toBe('inside\n');
    // Not below /tmp: under bwrap a confined command has a private /tmp of its own.
    const outside = `/var/tmp/execd-terminal-outside-${process.pid}-${Date.now()}`;
    onTestFinished(() => rmSync(outside, { force: true }));
    const denied = await run(`echo nope > ${outside}`);
    expect(denied.exitCode).not.toBe(0);
    expect(denied.output).toMatch(backend.name === 'bwrap' ? /Read-only file system/ : /Permission denied/);
    expect(existsSync(outside)).toBe(false);

    const token = readFileSync(join(daemon.stateDir, 'token'), 'utf8').trim();
    const tokenRead = await run(`cat '${join(daemon.stateDir, 'token')}'`);
    expect(tokenRead.exitCode).not.toBe(0);
    expect(tokenRead.output).not.toContain(token);
    expect(tokenRead.output).toContain(backend.hiddenError);
    const probe = `require('net').connect(${JSON.stringify(daemon.socketPath)}).on('connect', () => { console.log('CONNECTED'); process.exit(0); }).on('error', (e) => { console.log('refused ' + e.code); process.exit(3); })`;
    const socketTry = await run(`node -e ${JSON.stringify(probe).replace(/\$/g, '\\$')}`);
    expect(socketTry.output).toMatch(/refused (ENOENT|ECONNREFUSED|EACCES)/);
    expect(socketTry.exitCode).toBe(3);

    const sleep = uniqueSleep();
    await run(`(trap '' TERM HUP; exec sleep ${sleep}) & disown`);
    // The run may end before the background subshell has exec'd sleep: wait until it shows.
    const pids = await waitFor(() => {
      const found = pidsWithArgument(sleep);
      return found.length > 0 ? found : undefined;
    }, 'the disowned sleep to start');
    expect(await client.call(TerminalClose, { sessionId, terminalId })).toEqual({ closed: true });
    expect(await waitPidsGone(pids, 1_000)).toEqual([]);
  });
});
