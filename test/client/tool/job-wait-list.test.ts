/** `job_output { wait_ms }` and `job_list` through a real daemon (SPEC §10), and their pure parts. */
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { validateJobOutputArgs } from '../../../client/tool/args.js';
import { JOB_OUTPUT_DESCRIPTION, toolDescription, BASH_FLAVOR } from '../../../client/tool/description.js';
import { createShellTools } from '../../../client/tool/index.js';
import { renderJobList } from '../../../client/tool/job-tools.js';
import type { JobSnapshot } from '../../../protocol/types.js';
import { startDaemon } from '../../helpers/daemon.js';

function snapshot(overrides: Partial<JobSnapshot>): JobSnapshot {
  return {
    id: 'bash-1',
    kind: 'bash',
    label: 'make',
    ownerSession: 's1',
    status: 'running',
    pid: 10,
    exitCode: null,
    signal: null,
    startedAt: '2026-01-01T00:00:00.000Z',
    reported: false,
    stdoutBytes: 0,
    stderrBytes: 0,
    ...overrides,
  };
}

describe('wait_ms validation', () => {
  it('accepts a positive number, caps it at 30000, and refuses anything else in the timeoutMs style', () => {
    expect(validateJobOutputArgs({ job_id: 'bash-1', wait_ms: 1500 })).toEqual({
      ok: true,
      args: { job_id: 'bash-1', wait_ms: 1500 },
    });
    expect(validateJobOutputArgs({ job_id: 'bash-1', wait_ms: 600_000 })).toEqual({
      ok: true,
      args: { job_id: 'bash-1', wait_ms: 30_000 },
    });
    expect(validateJobOutputArgs({ job_id: 'bash-1' })).toEqual({ ok: true, args: { job_id: 'bash-1' } });
    for (const [value, shown] of [
      [0, '0'],
      [-5, '-5'],
      ['soon', '"soon"'],
      [null, 'null'],
      [Number.POSITIVE_INFINITY, 'Infinity'],
    ] as const) {
      expect(validateJobOutputArgs({ job_id: 'bash-1', wait_ms: value })).toEqual({
        ok: false,
        message: `invalid wait_ms: expected a positive number, got ${shown}`,
      });
    }
  });

  it('tells the model to wait with wait_ms rather than to poll', () => {
    expect(JOB_OUTPUT_DESCRIPTION).toContain('wait_ms');
    expect(JOB_OUTPUT_DESCRIPTION).toContain('rather than calling job_output in a loop');
    expect(toolDescription(BASH_FLAVOR, { background: true, escalation: false })).toContain('pass `wait_ms`');
    expect(toolDescription(BASH_FLAVOR, { background: false, escalation: false })).not.toContain('wait_ms');
  });
});

describe('renderJobList', () => {
  it('is one short line per job: id, status, exit facts, the first line of the command', () => {
    const text = renderJobList([
      snapshot({ id: 'bash-1', status: 'running', label: 'npm run dev' }),
      snapshot({ id: 'bash-2', status: 'completed', detail: 'exit code: 0', label: 'make test\nmake lint' }),
      snapshot({ id: 'bash-12', status: 'killed', detail: 'signal: SIGTERM', label: 'x'.repeat(100) }),
    ]);
    expect(text).toBe(
      [
        'id       status     exit             command',
        'bash-1   running    -                npm run dev',
        'bash-2   completed  exit code: 0     make test...',
        `bash-12  killed     signal: SIGTERM  ${'x'.repeat(77)}...`,
      ].join('\n'),
    );
    expect(renderJobList([])).toBe('no background jobs in this session');
  });
});

describe('job_output wait_ms and job_list through a real daemon', { timeout: 60_000 }, () => {
  it('waits for the next output instead of answering "no new output", and lists the jobs', async () => {
    const daemon = await startDaemon();
    const tools = await createShellTools({ client: await daemon.connect(), session: { id: 's1', cwd: daemon.dir } });
    expect(tools.systemPrompt.text).toContain('call job_output with wait_ms');
    const started = await tools.shell.execute({
      command: 'sleep 1; echo server ready; sleep 100',
      description: 'Start a slow server',
      run_in_background: true,
    });
    const jobId = started.text.slice('started background job '.length);
    const t0 = performance.now();
    const read = await tools.jobOutput!.execute({ job_id: jobId, wait_ms: 10_000 });
    const ms = performance.now() - t0;
    console.log(`job_output wait_ms 10000 on a job printing after 1 s: returned at ${ms.toFixed(0)} ms`);
    expect(read).toMatchObject({ text: `server ready\n[job ${jobId}: running]`, isError: false });
    expect(ms).toBeLessThan(9_000);

    const bad = await tools.jobOutput!.execute({ job_id: jobId, wait_ms: 'a while' });
    expect(bad).toMatchObject({ isError: true, text: 'invalid wait_ms: expected a positive number, got "a while"' });

    const done = await tools.shell.execute({ command: 'exit 3', description: 'Fail quickly', run_in_background: true });
    const doneId = done.text.slice('started background job '.length);
    await tools.jobOutput!.execute({ job_id: doneId, wait_ms: 10_000 });
    const list = await tools.jobList!.execute({});
    expect(list.isError).toBe(false);
    expect(list.text.split('\n')).toEqual([
      expect.stringMatching(/^id +status +exit +command$/),
      expect.stringMatching(new RegExp(`^${jobId} +running +- +sleep 1; echo server ready; sleep 100$`)),
      expect.stringMatching(new RegExp(`^${doneId} +completed +exit code: 3 +exit 3$`)),
    ]);
    expect(list.details).toMatchObject({ kind: 'list', jobs: [{ id: jobId }, { id: doneId }] });
    expect(tools.jobList!.inputSchema).toMatchObject({ type: 'object', properties: {}, additionalProperties: false });
    await tools.jobKill!.execute({ job_id: jobId });
  });
});
