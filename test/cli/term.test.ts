/**
 * `execd term open|list|send|read|close` and `execd attach` against a real daemon (SPEC §9.3). The
 * attach test runs the CLI for real inside tmux: send-keys types, capture-pane reads the screen.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { TerminalSnapshot } from '../../protocol/terminal.js';
import { cliWorld, type CliWorld } from '../helpers/cli.js';
import { CLI } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';

async function ok(world: CliWorld, args: string[]) {
  const result = await world.run(args);
  if (result.code !== 0) throw new Error(`execd ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return result;
}

async function snapshot(world: CliWorld, id: string): Promise<TerminalSnapshot | undefined> {
  const list = JSON.parse((await ok(world, ['term', 'list', '--json'])).stdout) as TerminalSnapshot[];
  return list.find((terminal) => terminal.id === id);
}

/** A socket path for a private tmux server, in a temp dir of its own (removed after its kill-server). */
function tmuxSocket(): string {
  return join(mkdtempSync(join(tmpdir(), 'execd-tmux-')), 'tmux.sock');
}

describe('execd term and execd attach', { timeout: 120_000 }, () => {
  it('opens, sends, reads, lists and closes a terminal', async () => {
    const world = cliWorld();
    const id = (await ok(world, ['term', 'open', '--name', 'work'])).stdout.trim();
    expect(id).toMatch(/^term-\d+$/);

    const sent = await ok(world, ['term', 'send', id, 'cd /tmp && echo "at $PWD"']);
    expect(sent.stdout).toContain('at /tmp');
    // Plain text, as the library's tools show it: no raw ESC[?2004l of the prompt (issue 26.12).
    expect(sent.stdout).not.toContain('\x1b');
    expect(sent.stderr.trim().split('\n').at(-1)).toBe('[ready: prompt]');

    const asked = await ok(world, ['term', 'send', id, 'read -p "value? " v']);
    expect(asked.stderr.trim()).toBe('[ready: waiting for input]');
    await ok(world, ['term', 'send', id, 'forty-two']);
    const echoed = await ok(world, ['term', 'send', id, 'echo "v=$v"']);
    expect(echoed.stdout).toContain('v=forty-two');

    const read = await ok(world, ['term', 'read', id]);
    expect(read.stdout).toContain('at /tmp');
    expect(read.stdout).toContain('v=forty-two');
    expect(read.stderr.trim()).toBe(`[terminal ${id}: running]`);
    const screen = await ok(world, ['term', 'read', id, '--screen']);
    expect(screen.stdout).toContain('v=forty-two');
    expect(screen.stdout).not.toContain('\x1b');

    const list = await ok(world, ['term', 'list']);
    expect(list.stdout).toMatch(new RegExp(`^${id}\\s+running\\s+cli\\s+\\d+\\s+bash .*\\s+work$`, 'm'));

    expect((await ok(world, ['term', 'close', id])).stdout).toBe(`closed ${id}\n`);
    expect((await ok(world, ['term', 'close', id])).stdout).toBe(`${id} had already exited\n`);
    expect((await snapshot(world, id))?.status).toBe('exited');
  });

  it('runs argv instead of bash; send exits 124 on a timeout', async () => {
    const world = cliWorld();
    const id = (await ok(world, ['term', 'open', '--', 'python3', '-q'])).stdout.trim();
    const sent = await ok(world, ['term', 'send', id, 'print(6*7)']);
    expect(sent.stdout).toContain('42');
    const busy = await world.run([
      'term',
      'send',
      id,
      'import time; [print(i, flush=True) or time.sleep(0.1) for i in range(100)]',
      '--timeout',
      '500',
    ]);
    expect(busy.code).toBe(124);
    expect(busy.stderr.trim()).toBe('[timed out after 500ms]');
  });

  it("refuses another session's terminal and unknown ids with one line (exit 125)", async () => {
    const world = cliWorld();
    const id = (await ok(world, ['term', 'open', '--session', 'agent-1'])).stdout.trim();
    // The CLI's own session exists once something ran in it (a look never creates a session).
    await ok(world, ['run', '--', 'true']);
    const forbidden = await world.run(['term', 'send', id, 'echo hi']);
    expect(forbidden.code).toBe(125);
    expect(forbidden.stderr.trim().split('\n')).toHaveLength(1);
    const unknown = await world.run(['term', 'read', 'term-999']);
    expect(unknown.code).toBe(125);
    expect(unknown.stderr).toContain('term-999');
  });

  it('attach joins a tmux window to the terminal: live output, typed keys, window size, Ctrl-] detaches', async () => {
    const world = cliWorld();
    const id = (await ok(world, ['term', 'open'])).stdout.trim();
    await ok(world, ['term', 'send', id, 'echo before-attach']);

    const server = tmuxSocket();
    const tmux = (...args: string[]) => {
      const result = spawnSync('tmux', ['-S', server, ...args], { encoding: 'utf8', env: world.env });
      if (result.status !== 0) throw new Error(`tmux ${args[0]}: ${result.stderr}`);
      return result.stdout;
    };
    onTestFinished(() => {
      spawnSync('tmux', ['-S', server, 'kill-server'], { stdio: 'ignore' });
      rmSync(dirname(server), { recursive: true, force: true });
    });
    const command = `env EXECD_SOCKET='${world.socketPath}' EXECD_STATE_DIR='${world.stateDir}' '${process.execPath}' '${CLI}' attach ${id}; echo "attach-exit=$?"; sleep 60`;
    tmux('new-session', '-d', '-s', 'a', '-x', '100', '-y', '30', command);
    const screen = () => tmux('capture-pane', '-p', '-t', 'a');

    // The current screen is drawn first, then the window size reaches the terminal.
    await waitFor(() => screen().includes('before-attach'), 'the attached screen to show earlier output');
    await waitFor(async () => {
      const terminal = await snapshot(world, id);
      return terminal?.cols === 100 && terminal.rows === 30;
    }, 'the terminal to take the window size');

    // Keys typed in the window reach the terminal, and its output comes back live.
    tmux('send-keys', '-t', 'a', 'echo typed-$((6*7))', 'Enter');
    await waitFor(() => screen().includes('typed-42'), 'the typed command to run and show');
    expect((await ok(world, ['term', 'read', id])).stdout).toContain('typed-42');

    // Output caused by someone else (another client's send) shows up live too.
    await ok(world, ['term', 'send', id, 'echo from-another-client']);
    await waitFor(() => screen().includes('from-another-client'), 'output of another client to show');

    // The window's size is followed.
    tmux('resize-window', '-t', 'a', '-x', '120', '-y', '35');
    await waitFor(async () => {
      const terminal = await snapshot(world, id);
      return terminal?.cols === 120 && terminal.rows === 35;
    }, 'the terminal to follow the new window size');

    // Ctrl-C goes to the terminal's program, not to attach.
    tmux('send-keys', '-t', 'a', 'sleep 30', 'Enter');
    await waitFor(async () => (await snapshot(world, id))?.foreground?.command === 'sleep', 'sleep to run');
    tmux('send-keys', '-t', 'a', 'C-c');
    await waitFor(async () => (await snapshot(world, id))?.foreground === undefined, 'sleep to be interrupted');

    // Ctrl-] detaches: attach exits 0 and the terminal keeps running.
    tmux('send-keys', '-t', 'a', 'C-]');
    await waitFor(() => screen().includes('attach-exit=0'), 'attach to exit');
    expect(screen()).toContain(`[detached from ${id}; it keeps running]`);
    expect((await snapshot(world, id))?.status).toBe('running');
    const after = await ok(world, ['term', 'send', id, 'echo still-here']);
    expect(after.stdout).toContain('still-here');
  });

  it('attach ends with the terminal exit line when its program exits', async () => {
    const world = cliWorld();
    const id = (await ok(world, ['term', 'open'])).stdout.trim();
    const server = tmuxSocket();
    const tmux = (...args: string[]) =>
      spawnSync('tmux', ['-S', server, ...args], { encoding: 'utf8', env: world.env }).stdout;
    onTestFinished(() => {
      spawnSync('tmux', ['-S', server, 'kill-server'], { stdio: 'ignore' });
      rmSync(dirname(server), { recursive: true, force: true });
    });
    const command = `env EXECD_SOCKET='${world.socketPath}' EXECD_STATE_DIR='${world.stateDir}' '${process.execPath}' '${CLI}' attach ${id}; echo "attach-exit=$?"; sleep 60`;
    tmux('new-session', '-d', '-s', 'a', '-x', '80', '-y', '24', command);
    await waitFor(async () => (await snapshot(world, id))?.cols === 80, 'attach to be joined');
    await waitFor(
      () => {
        tmux('send-keys', '-t', 'a', 'echo ping', 'Enter');
        return tmux('capture-pane', '-p', '-t', 'a').includes('ping\n');
      },
      'attach to take keys',
      { intervalMs: 300 },
    );
    tmux('send-keys', '-t', 'a', 'exit 5', 'Enter');
    await waitFor(
      () => tmux('capture-pane', '-p', '-t', 'a').includes('attach-exit=5'),
      'attach to exit with the code',
    );
    expect(tmux('capture-pane', '-p', '-t', 'a')).toContain('[terminal exited: code 5]');
  });
});
