/**
 * A bubblewrap start that loses a race with the mount table (a container stopping while bwrap
 * remounts what it copied) is started again; other runner failures are not. The race itself
 * cannot be provoked on demand, so the daemon's bwrap is a script that answers with bwrap's own
 * words for it as many times as a file says, then execs the real bwrap.
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ExecdRpcError } from '../../client/connection.js';
import { JobRead, JobWait, SessionOpen, ShellStart } from '../../protocol/methods.js';
import { sandboxedSession } from '../helpers/sandbox.js';
import { waitFor } from '../helpers/wait.js';
import { scrape, startObservedDaemon } from '../observability/helpers.js';

/** What bwrap printed when a podman overlay went away during its start. */
const RACE =
  "bwrap: Can't bind mount /oldroot/ on /newroot/: Unable to apply mount flags: " +
  'remount "/newroot/var/lib/containers/storage/overlay/e29840fc/merged": No such file or directory';

/** A runner failure that has nothing to do with the mount table. */
const OTHER = "bwrap: Can't mkdir /newroot/nowhere: Permission denied";

/** A bwrap that fails its next `failures` starts with `message`, and counts every start. */
function flakyBwrap(failures: number, message: string) {
  const dir = mkdtempSync(join(tmpdir(), 'execd-flaky-bwrap-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'bwrap');
  writeFileSync(join(dir, 'message'), `${message}\n`);
  writeFileSync(
    path,
    `#!/bin/sh
echo start >> '${dir}/starts'
left=$(cat '${dir}/failures' 2>/dev/null || echo 0)
if [ "$left" -gt 0 ]; then
  echo $((left - 1)) > '${dir}/failures'
  cat '${dir}/message' >&2
  exit 1
fi
exec bwrap "$@"
`,
  );
  chmodSync(path, 0o755);
  return {
    path,
    /** Arms the failures once the daemon's start-up probe has passed. */
    arm: () => {
      writeFileSync(join(dir, 'starts'), '');
      writeFileSync(join(dir, 'failures'), String(failures));
    },
    starts: () => readFileSync(join(dir, 'starts'), 'utf8').split('\n').filter(Boolean).length,
  };
}

async function confinedClient(bwrap: ReturnType<typeof flakyBwrap>) {
  const { client } = await sandboxedSession(
    { mode: 'workspace-write' },
    { env: { EXECD_BWRAP: bwrap.path }, config: { sandboxBackend: 'bwrap' } },
  );
  bwrap.arm();
  return client;
}

describe('sandbox: a runner that loses a race with the mount table', () => {
  it('is started again, and the run answers and streams only what the command wrote', async () => {
    const bwrap = flakyBwrap(2, RACE);
    const client = await confinedClient(bwrap);
    const streamed: string[] = [];
    const result = await client.run(
      { sessionId: 's1', command: 'echo out; echo err >&2' },
      { onOutput: ({ stream, text }) => streamed.push(`${stream}:${text}`) },
    );
    expect(result).toMatchObject({
      exitCode: 0,
      stdout: { text: 'out\n' },
      stderr: { text: 'err\n' },
      sandbox: { enforcement: 'bwrap', denied: false },
    });
    expect(bwrap.starts()).toBe(3);
    expect(streamed.join('')).not.toContain('bwrap:');
    expect(streamed).toContain('stdout:out\n');
  });

  it('gives up after three starts with SANDBOX_UNAVAILABLE and the runner’s words', async () => {
    const bwrap = flakyBwrap(5, RACE);
    const client = await confinedClient(bwrap);
    const error = await client.run({ sessionId: 's1', command: 'echo never' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExecdRpcError);
    expect(error).toMatchObject({ errorName: 'SANDBOX_UNAVAILABLE' });
    expect((error as Error).message).toContain('Unable to apply mount flags');
    expect(bwrap.starts()).toBe(3);
  });

  it('any other runner failure is answered at the first start', async () => {
    const bwrap = flakyBwrap(5, OTHER);
    const client = await confinedClient(bwrap);
    const error = await client.run({ sessionId: 's1', command: 'echo never' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ errorName: 'SANDBOX_UNAVAILABLE' });
    expect((error as Error).message).toContain("Can't mkdir /newroot/nowhere");
    expect(bwrap.starts()).toBe(1);
  });

  it('counts as one command: one spawn time, and the audit log’s end line names the process that ran', async () => {
    const bwrap = flakyBwrap(2, RACE);
    const { daemon, base, auditPath } = await startObservedDaemon({
      env: { EXECD_BWRAP: bwrap.path },
      config: { sandboxBackend: 'bwrap' },
    });
    const workspace = join(daemon.dir, 'ws');
    mkdirSync(workspace);
    const client = await daemon.connect();
    await client.call(SessionOpen, { sessionId: 's1', cwd: workspace, sandbox: { mode: 'workspace-write' } });
    bwrap.arm();
    const spawns = async () => (await scrape(base)).samples.get('execd_spawn_duration_seconds_count{kind="run"}') ?? 0;
    const before = await spawns();
    const result = await client.run({ sessionId: 's1', command: 'echo out' });
    expect(result).toMatchObject({ exitCode: 0, stdout: { text: 'out\n' } });
    expect(bwrap.starts()).toBe(3);
    expect((await spawns()) - before).toBe(1);
    const lines = await waitFor(() => {
      const parsed = readFileSync(auditPath, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      return parsed.some((line) => line.event === 'command.end') ? parsed : undefined;
    }, 'the command.end line');
    expect(lines.filter((line) => line.event === 'command.start')).toHaveLength(1);
    expect(lines.find((line) => line.event === 'command.end')).toMatchObject({ pid: result.pid, exitCode: 0 });
  });

  it('a job is started again under the same id; its log holds only what the command wrote', async () => {
    const bwrap = flakyBwrap(2, RACE);
    const client = await confinedClient(bwrap);
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'echo out; echo err >&2' });
    const job = await client.call(JobWait, { sessionId: 's1', jobId, timeoutMs: 30_000 });
    expect(job).toMatchObject({ status: 'completed', exitCode: 0, sandbox: { enforcement: 'bwrap', denied: false } });
    expect(job.sandbox?.runnerFailed).toBeUndefined();
    expect(bwrap.starts()).toBe(3);
    const read = await client.call(JobRead, { sessionId: 's1', jobId });
    expect(read.stdout.text).toBe('out\n');
    expect(read.stderr.text).toBe('err\n');
  });

  it('a job gives up after three starts: failed, with runnerFailed and the runner’s words', async () => {
    const bwrap = flakyBwrap(5, RACE);
    const client = await confinedClient(bwrap);
    const { jobId } = await client.call(ShellStart, { sessionId: 's1', command: 'echo never' });
    const job = await client.call(JobWait, { sessionId: 's1', jobId, timeoutMs: 30_000 });
    expect(job).toMatchObject({ status: 'failed', sandbox: { runnerFailed: true } });
    expect(job.detail).toContain('Unable to apply mount flags');
    expect(bwrap.starts()).toBe(3);
  });
});
