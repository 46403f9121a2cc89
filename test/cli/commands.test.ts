/**
 * The CLI commands a new user looked for (issue 26.14), through the real CLI and daemon: sessions
 * listed and closed, terminal write/signal/resize and its live cwd, `run --sandbox`, a job's stdin
 * written from the shell, and config errors in the words of the command line.
 */
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { TerminalSnapshot } from '../../protocol/terminal.js';
import { cliWorld, type CliWorld } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';

async function terminalOf(world: CliWorld, id: string): Promise<TerminalSnapshot> {
  const list = JSON.parse((await world.run(['term', 'list', '--json'])).stdout) as TerminalSnapshot[];
  return list.find((terminal) => terminal.id === id)!;
}

describe('execd CLI commands', { timeout: 120_000 }, () => {
  it('session list starts no daemon; session close kills the session and says what it ended', async () => {
    const world = cliWorld();
    expect(await world.run(['session', 'list'])).toMatchObject({ code: 0, stdout: 'no sessions\n' });
    expect(world.daemonPids()).toEqual([]);
    expect((await world.run(['start', '--', 'sleep 60'])).code).toBe(0);
    expect((await world.run(['term', 'open'])).code).toBe(0);
    const listed = await world.run(['session', 'list']);
    expect(listed.stdout).toMatch(/^cli +\d+ +1 +1 +\//m);
    const closed = await world.run(['session', 'close', 'cli']);
    console.log(`session close: ${JSON.stringify(closed.stdout)}`);
    expect(closed.stdout).toMatch(/^closed session cli: killed 1 job, closed 1 terminal, removed \d+ files?\n$/);
    expect((await world.run(['session', 'list'])).stdout).toBe('no sessions\n');
    const again = await world.run(['session', 'close', 'cli']);
    expect(again).toMatchObject({ code: 125 });
    expect(again.stderr).toMatch(/^execd session close: no session cli in the daemon/);
    expect((await world.run(['session', 'shut'])).code).toBe(2);
  });

  it('term write, signal and resize; term list shows the cwd after a cd', async () => {
    const world = cliWorld();
    const place = realpathSync(mkdtempSync(join(tmpdir(), 'execd-cd-')));
    onTestFinished(() => rmSync(place, { recursive: true, force: true }));
    const id = (await world.run(['term', 'open'])).stdout.trim();
    expect((await world.run(['term', 'send', id, `cd ${place}`])).code).toBe(0);
    expect((await terminalOf(world, id)).cwd).toBe(place);
    expect((await world.run(['term', 'list'])).stdout).toContain(place);

    expect((await world.run(['term', 'resize', id, '120', '40'])).stdout).toBe(`${id} is 120x40\n`);
    expect(await terminalOf(world, id)).toMatchObject({ cols: 120, rows: 40 });
    const bad = await world.run(['term', 'resize', id, 'wide', '40']);
    expect(bad).toMatchObject({ code: 125, stderr: 'execd term resize: cols must be an integer from 1 to 1000\n' });

    // write returns at once: the sleep it typed runs in the foreground until the signal.
    expect((await world.run(['term', 'write', id, 'sleep 60\r'])).stdout).toBe(`wrote 9 bytes to ${id}\n`);
    await waitFor(async () => (await terminalOf(world, id)).foreground?.command === 'sleep', 'sleep in the foreground');
    const signalled = await world.run(['term', 'signal', id, 'int']);
    expect(signalled.stdout).toMatch(new RegExp(`^sent SIGINT to process group \\d+ of ${id}\\n$`));
    await waitFor(async () => (await terminalOf(world, id)).foreground === undefined, 'the sleep interrupted');
    const unknown = await world.run(['term', 'signal', id, 'HUP']);
    expect(unknown).toMatchObject({ code: 2 });
    expect(unknown.stderr).toMatch(/^execd term signal: SIGNAL must be one of SIGINT, .*"HUP"/);
  });

  it('run --sandbox read-only cannot write its cwd; workspace-write writes there and nowhere else', async () => {
    const world = cliWorld();
    const workspace = join(world.dir, 'ws');
    mkdirSync(workspace);
    const outside = join(world.dir, 'outside');
    const readOnly = await world.run(['run', '--sandbox', 'read-only', '--', 'touch ro'], { cwd: workspace });
    console.log(`read-only touch: exit ${readOnly.code}, ${JSON.stringify(readOnly.stderr)}`);
    expect(readOnly.code).not.toBe(0);
    expect(existsSync(join(workspace, 'ro'))).toBe(false);
    const inside = await world.run(['run', '--sandbox', 'workspace-write', '--', 'touch rw'], { cwd: workspace });
    expect(inside.code).toBe(0);
    expect(existsSync(join(workspace, 'rw'))).toBe(true);
    const escape = await world.run(['run', '--sandbox', 'workspace-write', '--', `touch ${outside}`], {
      cwd: workspace,
    });
    // bubblewrap gives the command a private /tmp, where the touch may succeed: the host's file is what counts.
    console.log(`workspace-write touch outside: exit ${escape.code}, host file exists: ${existsSync(outside)}`);
    expect(existsSync(outside)).toBe(false);
    const bogus = await world.run(['run', '--sandbox', 'sealed', '--', 'true']);
    expect(bogus.code).toBe(2);
    expect(bogus.stderr).toMatch(/^execd run: --sandbox must be one of read-only, workspace-write, danger-full-access/);
  });

  it("start --keep-stdin and write feed a job's stdin; --eof ends it; a job without it is refused", async () => {
    const world = cliWorld();
    const job = (
      await world.run(['start', '--keep-stdin', '--', 'while read -r l; do echo "got $l"; done; echo eof'])
    ).stdout.trim();
    expect((await world.run(['write', job, 'hello'])).stdout).toBe(`wrote 6 bytes to ${job}\n`);
    expect((await world.run(['write', job, '--eof'])).stdout).toBe(`wrote 0 bytes to ${job}, closed its stdin\n`);
    expect((await world.run(['wait', job])).code).toBe(0);
    expect((await world.run(['read', job])).stdout).toBe('got hello\neof\n');
    const plain = (await world.run(['start', '--', 'sleep 30'])).stdout.trim();
    const refused = await world.run(['write', plain, 'x']);
    console.log(`write to a job without --keep-stdin: ${JSON.stringify(refused.stderr)}`);
    expect(refused.code).toBe(125);
    expect(refused.stderr).toMatch(new RegExp(`^execd write: .*${plain}.*\\n$`));
    expect((await world.run(['write', plain])).code).toBe(2);
  });

  it('config set names the KEY, not the protocol param that carried it', async () => {
    const world = cliWorld();
    const bad = await world.run(['config', 'set', 'graceMs=-1']);
    expect(bad).toMatchObject({ code: 125, stderr: 'execd config: graceMs must be a positive finite number\n' });
  });
});
