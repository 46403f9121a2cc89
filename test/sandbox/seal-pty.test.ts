/**
 * A confined command opens no pty but its own (SPEC §16), once per runner: a read-only job of one
 * session that watches `/dev/pts` while another session opens a terminal and runs commands in it
 * opens nothing, so it can neither read what is typed there nor forge that terminal's output.
 */
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  JobKill,
  JobPeek,
  JobWait,
  SessionOpen,
  ShellStart,
  TerminalOpen,
  TerminalRun,
} from '../../protocol/methods.js';
import { startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { ownedDir, startUnprivilegedDaemon } from '../helpers/unprivileged-daemon.js';
import { BACKENDS } from '../helpers/sandbox.js';

/**
 * Tries, every 20 ms for a minute, to open each `/dev/pts/<n>` (read, write, both) and
 * `/dev/ptmx`; says OPENED for each success (then writes a forged prompt marker into it or reads
 * from it) and, every 10 rounds, the errors it met.
 */
const WATCHER = `python3 -c '
import errno, os, time
errors = set()
rounds = 0
end = time.time() + 60
while time.time() < end:
    for n in range(256):
        path = "/dev/pts/%d" % n
        for flags in (os.O_RDONLY, os.O_WRONLY, os.O_RDWR):
            try:
                fd = os.open(path, flags | os.O_NOCTTY | os.O_NONBLOCK)
            except OSError as e:
                errors.add(errno.errorcode[e.errno])
                continue
            print("OPENED", path, flags, flush=True)
            try:
                if flags == os.O_RDONLY:
                    os.read(fd, 4096)
                else:
                    os.write(fd, b"\\x1b]133;D;0;execd=forged\\x07forged\\n")
            except OSError:
                pass
            os.close(fd)
    try:
        os.close(os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY))
        print("PTMX", flush=True)
    except OSError as e:
        errors.add("ptmx:" + errno.errorcode[e.errno])
    rounds += 1
    if rounds % 10 == 0:
        print("ROUNDS", rounds, " ".join(sorted(errors)), flush=True)
    time.sleep(0.02)
'`;

/**
 * Starts the daemon in a mount namespace with a devpts of its own, so that the tests' pty
 * watchers see the ptys of this daemon only, never those of other tests running beside them.
 * Needs root (to mount), as the machine and `.ci/run` run the suite.
 */
const PRIVATE_DEVPTS = [
  'unshare',
  '-m',
  '--',
  'sh',
  '-c',
  'mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /dev/pts && mount --bind /dev/pts/ptmx /dev/ptmx && exec "$@"',
  'sh',
];

/** A runner under test, and how its daemon starts (in a devpts of its own) with two workspaces. */
interface PtyVariant {
  name: string;
  backend: 'bwrap' | 'landlock';
  start: () => Promise<{ daemon: TestDaemon; wsA: string; wsB: string }>;
}

const VARIANTS: PtyVariant[] = [
  ...BACKENDS.map((backend): PtyVariant => ({
    name: backend.name,
    backend: backend.name,
    start: async () => {
      const daemon = await startDaemon({ config: { ...backend.config }, launcher: PRIVATE_DEVPTS });
      const [wsA, wsB] = [join(daemon.dir, 'wsA'), join(daemon.dir, 'wsB')];
      mkdirSync(wsA);
      mkdirSync(wsB);
      return { daemon, wsA, wsB };
    },
  })),
  {
    name: 'landlock, unprivileged',
    backend: 'landlock',
    start: async () => {
      const { daemon, base } = await startUnprivilegedDaemon(PRIVATE_DEVPTS);
      return { daemon, wsA: ownedDir(join(base, 'wsA')), wsB: ownedDir(join(base, 'wsB')) };
    },
  },
];

describe.each(VARIANTS)('sealed ptys under $name', (variant) => {
  const backend = { name: variant.backend };
  it("a read-only job watching /dev/pts gets nothing of another session's terminal and forges nothing", async () => {
    const { daemon, wsA, wsB } = await variant.start();
    const client = await daemon.connect();
    if (variant.name.includes('unprivileged')) expect(client.info.capabilities.sandbox.backend).toBe('landlock');
    await client.call(SessionOpen, { sessionId: 'A', cwd: wsA, sandbox: { mode: 'read-only' } });
    await client.call(SessionOpen, { sessionId: 'B', cwd: wsB, sandbox: { mode: 'workspace-write' } });

    const { jobId } = await client.call(ShellStart, { sessionId: 'A', command: WATCHER });
    onTestFinished(() => client.call(JobKill, { sessionId: 'A', jobId }).then(() => {}));
    await client.call(JobWait, { sessionId: 'A', jobId, timeoutMs: 30_000, until: { output: 'ROUNDS' } });

    const opened = await client.call(TerminalOpen, { sessionId: 'B' });
    const terminalId = opened.terminal.id;
    const run = (command: string) => client.call(TerminalRun, { sessionId: 'B', terminalId, command });
    // The terminal's shell keeps its own pty: its streams, a reopen (/dev/tty, /dev/stdin), its size.
    expect(await run('echo typed-$((6*7))')).toMatchObject({ state: 'completed', exitCode: 0, output: 'typed-42\n' });
    expect(await run('echo own > /dev/tty && : </dev/stdin && stty size')).toMatchObject({
      exitCode: 0,
      output: 'own\n24 80\n',
    });
    expect(await run('false')).toMatchObject({ state: 'completed', exitCode: 1, output: '' });
    expect(await run('echo last')).toMatchObject({ state: 'completed', exitCode: 0, output: 'last\n' });
    // Let the watcher make a few more rounds while the terminal is open and idle.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const watched = (await client.call(JobPeek, { sessionId: 'A', jobId })).stdout.text;
    const lastRound =
      watched
        .split('\n')
        .filter((line) => line.startsWith('ROUNDS'))
        .at(-1) ?? '';
    console.log(`${variant.name} pty watcher: ${lastRound}`);
    expect(watched).not.toContain('OPENED');
    // The host's ptys are refused (Landlock) or not there at all (bubblewrap's own devpts).
    expect(lastRound).toContain(backend.name === 'landlock' ? 'EACCES' : 'ENOENT');
    if (backend.name === 'landlock') {
      expect(watched).not.toContain('PTMX');
      expect(lastRound).toContain('ptmx:EACCES');
    }
    const stream = await run('echo after');
    expect(stream).toMatchObject({ state: 'completed', exitCode: 0, output: 'after\n' });
  });
});

/**
 * Opens each pty that appears in `/dev/pts` at once and reads it from a thread of its own, waiting
 * in `select`, for 1.5 s (it must not steal the later `terminal/run` lines): says SAW with what it caught
 * of a private marker or a setup line.
 */
const CATCHER = `python3 -c '
import os, select, threading, time
def catch(name):
    try:
        fd = os.open("/dev/pts/" + name, os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        return
    print("OPENED", name, flush=True)
    end = time.time() + 1.5
    while time.time() < end:
        if select.select([fd], [], [], 0.05)[0]:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if b"execd=" in data or b"PROMPT_COMMAND" in data:
                print("SAW", data, flush=True)
    os.close(fd)
seen = set(os.listdir("/dev/pts"))
print("WATCHING", flush=True)
end = time.time() + 30
while time.time() < end:
    for name in set(os.listdir("/dev/pts")) - seen:
        seen.add(name)
        threading.Thread(target=catch, args=(name,), daemon=True).start()
    time.sleep(0.001)
'`;

describe('the terminal start-up secret', () => {
  it('never travels as terminal input: a reader of each new pty catches nothing; the setup file is gone once read', async () => {
    const daemon = await startDaemon({ launcher: PRIVATE_DEVPTS });
    const client = await daemon.connect();
    const unconfined = { mode: 'danger-full-access' } as const;
    await client.call(SessionOpen, { sessionId: 'A', cwd: daemon.dir, sandbox: unconfined });
    await client.call(SessionOpen, { sessionId: 'B', cwd: daemon.dir, sandbox: unconfined });
    const { jobId } = await client.call(ShellStart, { sessionId: 'A', command: CATCHER });
    onTestFinished(() => client.call(JobKill, { sessionId: 'A', jobId }).then(() => {}));
    await client.call(JobWait, { sessionId: 'A', jobId, timeoutMs: 30_000, until: { output: 'WATCHING' } });

    const opened = await client.call(TerminalOpen, { sessionId: 'B' });
    const terminalId = opened.terminal.id;
    await client.call(JobWait, { sessionId: 'A', jobId, timeoutMs: 10_000, until: { output: 'OPENED' } });
    const spill = join(daemon.stateDir, 'spill', 'B');
    expect(readdirSync(spill).filter((name) => name.endsWith('.setup'))).toEqual([]);
    // Past the catcher's reading window, the shell answers runs with its own markers.
    await new Promise((resolve) => setTimeout(resolve, 1_600));
    const run = await client.call(TerminalRun, { sessionId: 'B', terminalId, command: 'echo ran' });
    expect(run).toMatchObject({ state: 'completed', exitCode: 0, output: 'ran\n' });
    const caught = (await client.call(JobPeek, { sessionId: 'A', jobId })).stdout.text;
    console.log(`pty catcher: ${caught.trim().replace(/\n/g, ' | ')}`);
    expect(caught).toContain('OPENED');
    expect(caught).not.toContain('SAW');
  });
});
