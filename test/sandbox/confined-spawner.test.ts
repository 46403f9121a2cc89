/**
 * The warm confined spawner of the Landlock runner (SPEC §16): a confined run or job is forked by a
 * helper process restricted once per (session, policy) — no Node process per command — which is
 * non-dumpable, keeps its channel from every command, ends when idle, is replaced when a command
 * kills it or the session's sandbox narrows, and fails closed when it cannot restrict itself.
 */
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ExecdRpcError } from '../../client/connection.js';
import { JobKill, JobRead, JobWait, SessionOpen, SessionUpdate, ShellStart } from '../../protocol/methods.js';
import { startDaemon } from '../helpers/daemon.js';
import { childrenOf, pidAlive, pidsWithArgument } from '../helpers/procs.js';
import { sandboxedSession, uniqueSleep } from '../helpers/sandbox.js';
import { waitFor } from '../helpers/wait.js';

const LANDLOCK = { config: { sandboxBackend: 'landlock' } };

/** The daemon's confined spawner processes (daemon/sandbox/confined-worker.js). */
function confinedSpawners(daemonPid: number): number[] {
  return childrenOf(daemonPid)
    .filter((stat) => stat.state !== 'Z')
    .map((stat) => stat.pid)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('confined-worker.js');
      } catch {
        return false;
      }
    });
}

/** The `sleep <token>` process itself (not the shell whose command line names it too). */
function sleepOf(token: string): number | undefined {
  return pidsWithArgument(token).find((pid) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'sleep');
}

/** The parent pid of a process, from its stat. */
function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** The error a rejected call carries. */
async function errorOf(promise: Promise<unknown>): Promise<ExecdRpcError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ExecdRpcError);
  return error as ExecdRpcError;
}

describe('the confined spawner under Landlock', () => {
  it('forks every confined run and job from one warm helper: bash, no node, child of the helper', async () => {
    const { daemon, client, workspace } = await sandboxedSession({ mode: 'workspace-write' }, LANDLOCK);
    const facts = async () => {
      const result = await client.run({ sessionId: 's1', command: 'echo $$ $PPID; readlink /proc/$$/exe; true' });
      expect(result).toMatchObject({ exitCode: 0, sandbox: { mode: 'workspace-write', enforcement: 'landlock' } });
      const [ids, exe] = result.stdout.text.trim().split('\n');
      const [pid, ppid] = ids!.split(' ').map(Number);
      return { pid: pid!, ppid: ppid!, exe: exe! };
    };
    const first = await facts();
    const second = await facts();
    // The shell itself, not a node that restricted itself and exec'd it.
    expect(first.exe).toMatch(/\/bash$/);
    expect(second.ppid).toBe(first.ppid);
    expect(confinedSpawners(daemon.pid)).toEqual([first.ppid]);
    expect(parentOf(first.ppid)).toBe(daemon.pid);
    expect(readlinkSync(`/proc/${first.ppid}/exe`)).toBe(process.execPath);

    // Still confined: the workspace is writable, the outside is not.
    const outside = await client.run({ sessionId: 's1', command: 'echo x > /etc/execd-confined-test' });
    expect(outside.sandbox).toEqual({ mode: 'workspace-write', denied: true, enforcement: 'landlock' });
    expect(existsSync('/etc/execd-confined-test')).toBe(false);

    // A job goes through the same helper; its output (a pipe to the daemon) reads back; kill reaches it.
    const token = uniqueSleep();
    const { jobId } = await client.call(ShellStart, {
      sessionId: 's1',
      command: `echo started > job.txt; echo out; echo err >&2; sleep ${token}`,
    });
    const sleeper = await waitFor(() => sleepOf(token), 'the job');
    // bash may exec its last command: the sleep is the helper's child or grandchild, nothing between.
    const parent = parentOf(sleeper);
    expect(parent === first.ppid || parentOf(parent) === first.ppid).toBe(true);
    expect(readlinkSync(`/proc/${parent}/exe`)).toMatch(parent === first.ppid ? /node/ : /\/bash$/);
    expect(readFileSync(join(workspace, 'job.txt'), 'utf8')).toBe('started\n');
    await client.call(JobKill, { sessionId: 's1', jobId });
    const ended = await client.call(JobWait, { sessionId: 's1', jobId, timeoutMs: 10_000 });
    expect(ended.status).toBe('killed');
    const read = await client.call(JobRead, { sessionId: 's1', jobId });
    expect(read.delta).toBe('out\n[stderr]\nerr\n');
    expect(pidAlive(sleeper)).toBe(false);
  });

  it('serves requests that arrive while it starts: they wait, then all run in the one helper', async () => {
    const { daemon, client } = await sandboxedSession({ mode: 'workspace-write' }, LANDLOCK);
    const runs = await Promise.all(
      [1, 2, 3, 4].map((n) => client.run({ sessionId: 's1', command: `echo $PPID; echo ${n} > f${n}.txt` })),
    );
    const parents = new Set(runs.map((run) => run.stdout.text.trim()));
    expect(runs.map((run) => run.exitCode)).toEqual([0, 0, 0, 0]);
    expect([...parents]).toEqual([String(confinedSpawners(daemon.pid)[0])]);
  });

  it("keeps its channel out of every command's descriptors", async () => {
    const { daemon, client } = await sandboxedSession({ mode: 'workspace-write' }, LANDLOCK);
    await client.run({ sessionId: 's1', command: 'true' });
    const [helper] = confinedSpawners(daemon.pid);
    // The channel is the helper's fd 3 (NODE_CHANNEL_FD).
    const channel = readlinkSync(`/proc/${helper}/fd/3`);
    expect(channel).toMatch(/^socket:/);
    const token = uniqueSleep();
    const running = client.run({ sessionId: 's1', command: `sleep ${token}`, timeoutMs: 20_000 });
    const command = await waitFor(() => sleepOf(token), 'the command');
    const fds = readdirSync(`/proc/${command}/fd`);
    const targets = fds.map((fd) => readlinkSync(`/proc/${command}/fd/${fd}`));
    expect(parentOf(command)).toBe(helper);
    expect(fds.sort()).toEqual(['0', '1', '2']);
    expect(targets).not.toContain(channel);
    expect(targets[0]).toBe('/dev/null');
    process.kill(command, 'SIGTERM');
    await running;
  });

  it('a command that kills its helper fails like a lost spawner; the next run gets a new, confined one', async () => {
    const { daemon, client, workspace } = await sandboxedSession({ mode: 'workspace-write' }, LANDLOCK);
    const before = await client.run({ sessionId: 's1', command: 'echo $PPID' });
    const helper = Number(before.stdout.text.trim());
    // SIGSTOP first: the daemon continues it (its run still ends, and so does the next).
    await client.run({ sessionId: 's1', command: 'kill -STOP $PPID; sleep 0.2' });
    const stopped = await client.run({ sessionId: 's1', command: 'echo $PPID' });
    expect(Number(stopped.stdout.text.trim())).toBe(helper);

    // Its own run fails: lost after its spawn was answered (SPAWN_FAILED), or before (fail closed).
    const token = uniqueSleep();
    const killer = await errorOf(client.run({ sessionId: 's1', command: `kill -KILL $PPID; sleep ${token}` }));
    expect(['SPAWN_FAILED', 'SANDBOX_UNAVAILABLE']).toContain(killer.errorName);
    expect(killer.message).toContain('the confined spawner process died (SIGKILL)');
    expect(pidsWithArgument(token)).toEqual([]);
    await waitFor(() => !pidAlive(helper) || undefined, 'the killed helper');

    const after = await client.run({ sessionId: 's1', command: 'echo $PPID; echo in > in.txt; echo x > /etc/execd-k' });
    const replacement = Number(after.stdout.text.trim());
    expect(replacement).not.toBe(helper);
    expect(confinedSpawners(daemon.pid)).toEqual([replacement]);
    expect(after.sandbox).toEqual({ mode: 'workspace-write', denied: true, enforcement: 'landlock' });
    expect(readFileSync(join(workspace, 'in.txt'), 'utf8')).toBe('in\n');
    expect(existsSync('/etc/execd-k')).toBe(false);
  });

  it('ends when idle and starts again on the next run', async () => {
    const { daemon, client } = await sandboxedSession({ mode: 'read-only' }, LANDLOCK);
    const first = Number((await client.run({ sessionId: 's1', command: 'echo $PPID' })).stdout.text.trim());
    // HELPER_IDLE_MS (2 s) after its last child.
    await waitFor(() => confinedSpawners(daemon.pid).length === 0 || undefined, 'the idle helper to end', {
      timeoutMs: 10_000,
    });
    expect(pidAlive(first)).toBe(false);
    const next = await client.run({ sessionId: 's1', command: 'echo $PPID; touch x' });
    expect(Number(next.stdout.text.trim())).not.toBe(first);
    expect(next.sandbox).toEqual({ mode: 'read-only', denied: true, enforcement: 'landlock' });
  });

  it('is replaced when session/update narrows the sandbox', async () => {
    const { daemon, client, workspace } = await sandboxedSession({ mode: 'workspace-write' }, LANDLOCK);
    const wide = Number((await client.run({ sessionId: 's1', command: 'echo $PPID' })).stdout.text.trim());
    await client.call(SessionUpdate, { sessionId: 's1', sandbox: { mode: 'read-only' } });
    await waitFor(() => !pidAlive(wide) || undefined, 'the helper of the wider policy to end');
    const narrow = await client.run({ sessionId: 's1', command: 'echo $PPID; echo x > narrowed.txt' });
    expect(Number(narrow.stdout.text.trim())).not.toBe(wide);
    expect(narrow.sandbox).toEqual({ mode: 'read-only', denied: true, enforcement: 'landlock' });
    expect(existsSync(join(workspace, 'narrowed.txt'))).toBe(false);
    expect(confinedSpawners(daemon.pid)).toHaveLength(1);
  });

  it("gives each command its unit's cgroup, and the helper goes back to its own", async () => {
    const { daemon, client } = await sandboxedSession({ mode: 'workspace-write' }, LANDLOCK);
    const scope = /"processScope":"(\w+)"/.exec(daemon.stderr())?.[1];
    if (scope !== 'cgroup') {
      console.log(`process scope here: ${scope}; the confined spawner's cgroup moves need cgroup`);
      return;
    }
    const cgroupOf = (pid: number | 'self') => readFileSync(`/proc/${pid}/cgroup`, 'utf8').trim().split('\n').at(-1)!;
    const free = await client.run({
      sessionId: 's1',
      command: 'cat /proc/self/cgroup',
      sandboxPolicy: { mode: 'workspace-write' },
    });
    const confined = free.stdout.text.trim().split('\n').at(-1)!;
    // Below the daemon's cgroup, in a unit of its own (…/s-<session>/u-<unit>).
    expect(confined).toMatch(/\/s-[0-9a-f]+\/u-[0-9a-f]+$/);
    const [helper] = confinedSpawners(daemon.pid);
    expect(cgroupOf(helper!)).toBe(cgroupOf(daemon.pid));
    const next = await client.run({ sessionId: 's1', command: 'cat /proc/self/cgroup' });
    expect(next.stdout.text.trim().split('\n').at(-1)).not.toBe(confined);
  });

  it('fails closed when it cannot restrict itself: SANDBOX_UNAVAILABLE for a run, runnerFailed for a job', async () => {
    const daemon = await startDaemon(LANDLOCK);
    const cwd = join(daemon.dir, 'cwd');
    const root = join(daemon.dir, 'root');
    mkdirSync(cwd);
    mkdirSync(root);
    const client = await daemon.connect();
    await client.call(SessionOpen, { sessionId: 's1', cwd, sandbox: { mode: 'workspace-write', workspaceRoot: root } });
    // A writable root that is gone: the restriction step refuses to grant it.
    rmSync(root, { recursive: true });
    const refused = await errorOf(client.run({ sessionId: 's1', command: 'echo ran > ran.txt' }));
    expect(refused.errorName).toBe('SANDBOX_UNAVAILABLE');
    expect(refused.message).toContain('could not restrict itself');
    expect(refused.message).toContain(`cannot grant ${root}`);
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'echo ran > ran.txt' });
    const job = await client.call(JobWait, { sessionId: 's1', jobId, timeoutMs: 10_000 });
    expect(job).toMatchObject({ status: 'failed', sandbox: { runnerFailed: true } });
    expect(existsSync(join(cwd, 'ran.txt'))).toBe(false);
    // The helper that could not restrict itself exits after it said so: no helper is left.
    await waitFor(() => confinedSpawners(daemon.pid).length === 0, 'the unconfinable helper to exit');
  });
});

describe('the confined spawner in the unprivileged condition (uid 1000, no capabilities)', () => {
  it('is non-dumpable: a command of its own domain and uid reads neither its environ nor its memory', async () => {
    if (process.getuid?.() !== 0) throw new Error('this test needs root: it writes the uid/gid maps of the namespace');
    const base = mkdtempSync(join(tmpdir(), 'execd-unpriv-'));
    onTestFinished(() => rmSync(base, { recursive: true, force: true }));
    for (const dir of [base, join(base, 'ws')]) {
      mkdirSync(dir, { recursive: true });
      chownSync(dir, 1000, 1000);
    }
    const daemon = await startDaemon({
      launcher: ['bash', join(import.meta.dirname, '..', 'helpers', 'unprivileged.sh')],
      socketPath: join(base, 'run', 'execd.sock'),
      stateDir: join(base, 'state'),
    });
    const client = await daemon.connect();
    expect(client.info.capabilities.sandbox).toMatchObject({ backend: 'landlock' });
    await client.call(SessionOpen, { sessionId: 's1', cwd: join(base, 'ws'), sandbox: { mode: 'workspace-write' } });
    const look = await client.run({
      sessionId: 's1',
      command:
        'id -u; echo $PPID; tr "\\0" "\\n" < /proc/$PPID/environ | wc -l; head -c 1 /proc/$PPID/mem | wc -c; true',
    });
    const [uid, parent, environ, mem] = look.stdout.text.trim().split('\n');
    expect(uid).toBe('1000');
    expect(readFileSync(`/proc/${parent}/cmdline`, 'utf8')).toContain('confined-worker.js');
    expect([environ, mem]).toEqual(['0', '0']);
    expect(look.stderr.text).toMatch(/environ: Permission denied[\s\S]*mem.*Permission denied/);
  });
});
