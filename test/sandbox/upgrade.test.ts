/**
 * Confined jobs across an upgrade in place (docs/deployment.md), once per runner: their output
 * reaches the daemon through pipes (bubblewrap's stderr, both streams under Landlock), which are
 * handed to the new program, so a confined job goes on, reads on without a gap on both streams,
 * and settles with its real exit status.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { JobList, JobPeek, JobRead, JobWait, ShellStart } from '../../protocol/methods.js';
import { CLI, type TestDaemon } from '../helpers/daemon.js';
import { BACKENDS, sandboxedSession } from '../helpers/sandbox.js';
import { waitFor } from '../helpers/wait.js';

/** Runs the built `execd upgrade` against `daemon`; resolves with its exit code and output. */
function upgrade(daemon: TestDaemon): Promise<{ code: number | null; output: string }> {
  const env = { ...process.env, EXECD_SOCKET: daemon.socketPath, EXECD_STATE_DIR: daemon.stateDir };
  const child = spawn(process.execPath, [CLI, 'upgrade'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (output += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (output += text));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, output })));
}

/** The numbers of `prefix N` lines in `text`, in order. */
function numbers(text: string, prefix: string): number[] {
  return [...text.matchAll(new RegExp(`^${prefix} (\\d+)$`, 'gm'))].map((match) => Number(match[1]));
}

describe.each(BACKENDS)('an upgrade in place under $name', (backend) => {
  it(
    'keeps a confined job across two upgrades: both streams read on without a gap, and it ends with its exit code',
    { timeout: 90_000 },
    async () => {
      const { daemon, client } = await sandboxedSession({ mode: 'workspace-write' }, { config: { ...backend.config } });
      const { jobId } = await client.call(ShellStart, {
        sessionId: 's1',
        command: 'for i in $(seq 1 60); do echo "line $i"; echo "err $i" >&2; sleep 0.05; done; exit 9',
      });
      await waitFor(
        async () => (await client.call(JobPeek, { sessionId: 's1', jobId })).stderr.text.includes('err 3\n'),
        'the job to count to 3',
      );
      const early = await client.call(JobRead, { sessionId: 's1', jobId });
      // Twice: the second program hands on the pipes the first one was given.
      for (let round = 0; round < 2; round++) {
        const upgraded = await upgrade(daemon);
        expect(upgraded.output).toMatch(/^execd daemon upgraded in place/);
        expect(upgraded.code).toBe(0);
      }
      const after = await daemon.session('s1');
      const [listed] = await after.call(JobList, { sessionId: 's1' });
      console.log(`${backend.name}: after the upgrade ${listed?.id} ${listed?.status}`);
      const settled = await after.call(JobWait, { sessionId: 's1', jobId, timeoutMs: 30_000 });
      expect(settled).toMatchObject({ status: 'completed', exitCode: 9, sandbox: { mode: 'workspace-write' } });
      const rest = await after.call(JobRead, { sessionId: 's1', jobId });
      const text = early.delta + rest.delta;
      console.log(
        `${backend.name}: ${numbers(early.delta, 'line').length} lines before the upgrade, ${numbers(text, 'line').length} and ${numbers(text, 'err').length} stderr lines in all`,
      );
      const all = Array.from({ length: 60 }, (_, index) => index + 1);
      expect(numbers(text, 'line')).toEqual(all);
      expect(numbers(text, 'err')).toEqual(all);
    },
  );
});
