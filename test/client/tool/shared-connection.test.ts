/**
 * Several sessions' tool sets on one connection: vscode-jsonrpc keeps one handler per
 * notification method, so the client owns it and fans `job/exited` out to every subscriber. Each
 * notice reaches its own session's harness exactly once, and disposing one tool set leaves the
 * others' notices flowing.
 */
import { describe, expect, it } from 'vitest';
import { createShellTools, type JobNotice, type ShellTools } from '../../../client/tool/index.js';
import { JobWait } from '../../../protocol/methods.js';
import { startDaemon } from '../../helpers/daemon.js';
import { waitFor } from '../../helpers/wait.js';

describe('sessions sharing one connection', () => {
  it('deliver every job notice once to its own session; disposing one leaves the others working', async () => {
    const daemon = await startDaemon();
    const client = await daemon.connect();
    const ids = ['agent-a', 'agent-b', 'agent-c'];
    const notices = new Map<string, JobNotice[]>(ids.map((id) => [id, []]));
    const tools = new Map<string, ShellTools>();
    for (const id of ids) {
      tools.set(
        id,
        await createShellTools({
          client,
          session: { id, cwd: daemon.dir },
          enableRunInBackground: true,
          onJobExited: (notice) => notices.get(id)!.push(notice),
        }),
      );
    }
    async function startJob(id: string, command: string): Promise<string> {
      const started = await tools.get(id)!.shell.execute({
        command,
        description: 'A short background job',
        run_in_background: true,
      });
      expect(started.details).toMatchObject({ kind: 'background' });
      return (started.details as { jobId: string }).jobId;
    }
    const jobsOf = (id: string) => notices.get(id)!.map((notice) => notice.job.id);

    // Two jobs in each session, all at once.
    const started = new Map<string, string[]>();
    for (const id of ids) started.set(id, [await startJob(id, 'sleep 0.3; echo one'), await startJob(id, 'echo two')]);
    await waitFor(() => ids.every((id) => notices.get(id)!.length >= 2), 'every session to hear of its two jobs');
    for (const id of ids) {
      expect(jobsOf(id).sort()).toEqual([...started.get(id)!].sort());
      for (const notice of notices.get(id)!) expect(notice.sessionId).toBe(id);
    }

    // B stops listening; its next job settles before A's and C's start, so on this one ordered
    // connection its notice (were it delivered) would arrive before theirs.
    tools.get('agent-b')!.dispose();
    const quiet = await startJob('agent-b', 'echo unheard');
    await client.call(JobWait, { sessionId: 'agent-b', jobId: quiet, timeoutMs: 10_000 });
    const [a3, c3] = [await startJob('agent-a', 'echo three'), await startJob('agent-c', 'echo three')];
    await waitFor(() => jobsOf('agent-a').includes(a3) && jobsOf('agent-c').includes(c3), 'A and C to hear again');
    expect(jobsOf('agent-a')).toHaveLength(3);
    expect(jobsOf('agent-c')).toHaveLength(3);
    expect(jobsOf('agent-b')).toEqual(expect.not.arrayContaining([quiet]));
    expect(jobsOf('agent-b')).toHaveLength(2);
  });

  it('a subscriber that throws does not keep the notice from the others', async () => {
    const daemon = await startDaemon();
    const client = await daemon.session('s1');
    const heard: string[] = [];
    client.onJobExited(() => {
      throw new Error('a faulty subscriber');
    });
    client.onJobExited((params) => heard.push(params.job.id));
    const tools = await createShellTools({ client, session: { id: 's1' }, enableRunInBackground: true });
    const started = await tools.shell.execute({ command: 'true', description: 'Nothing', run_in_background: true });
    const jobId = (started.details as { jobId: string }).jobId;
    await waitFor(() => heard.includes(jobId), 'the healthy subscriber to hear of the job');
  });
});
