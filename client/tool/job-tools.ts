/**
 * The job tools that complete background runs (docs/library.md, docs/jobs.md): `job_output`,
 * `job_kill` and `job_list`.
 */
import { JobKill, JobList, JobRead, JobWait } from '../../protocol/methods.js';
import type { JobReadResult, JobSnapshot } from '../../protocol/types.js';
import type { ExecdClient } from '../connection.js';
import { escalationHintLine, renderProcessRead } from '../../shared/render.js';
import {
  jobArgsSchema,
  jobListArgsSchema,
  jobOutputArgsSchema,
  jsonSchemaOf,
  MAX_WAIT_MS,
  validateJobArgs,
  validateJobOutputArgs,
  type Validated,
} from './args.js';
import { JOB_KILL_DESCRIPTION, JOB_LIST_DESCRIPTION, JOB_OUTPUT_DESCRIPTION } from './description.js';
import { widerTargets } from './escalation.js';
import { callFailure, throwIfAborted, type CallFailure } from './failure.js';
import type { ExecuteOptions, ModelTool, ToolResult } from './types.js';

/** The structured facts of a `job_output` call. */
export type JobOutputDetails =
  { kind: 'read'; read: JobReadResult } | { kind: 'invalid'; message: string } | CallFailure;

/** The structured facts of a `job_list` call. */
export type JobListDetails = { kind: 'list'; jobs: JobSnapshot[] } | { kind: 'invalid'; message: string } | CallFailure;

/** The structured facts of a `job_kill` call. */
export type JobKillDetails =
  { kind: 'kill'; jobId: string; killed: boolean } | { kind: 'invalid'; message: string } | CallFailure;

/** What the job tools are built from. */
export interface JobToolOptions {
  client: ExecdClient;
  sessionId: string;
  /** Whether a denial notice carries the escalation hint. */
  escalation: boolean;
}

/** Validates, calls, and turns a daemon error into an error result; an abort rejects. */
async function callJobTool<A, D>(
  raw: unknown,
  signal: AbortSignal | undefined,
  validate: (raw: unknown) => Validated<A>,
  call: (args: A) => Promise<ToolResult<D>>,
): Promise<ToolResult<D | CallFailure | { kind: 'invalid'; message: string }>> {
  throwIfAborted(signal);
  const validated = validate(raw);
  if (!validated.ok)
    return { text: validated.message, isError: true, details: { kind: 'invalid', message: validated.message } };
  try {
    const result = await call(validated.args);
    throwIfAborted(signal);
    return result;
  } catch (error) {
    throwIfAborted(signal);
    return callFailure(error);
  }
}

/**
 * `job_output`: a consuming read of what a job printed since the last read; with `wait_ms`, the
 * daemon first waits for new output (or the job's end) up to that long.
 */
export function createJobOutputTool({ client, sessionId, escalation }: JobToolOptions): ModelTool<JobOutputDetails> {
  return {
    name: 'job_output',
    description: JOB_OUTPUT_DESCRIPTION,
    inputSchema: jsonSchemaOf(jobOutputArgsSchema()),
    execute: (raw: unknown, { signal }: ExecuteOptions = {}) =>
      callJobTool(raw, signal, validateJobOutputArgs, async ({ job_id: jobId, wait_ms: waitMs, wait_for: until }) => {
        // A condition first (docs/reconnect.md), then the read of what the job printed meanwhile.
        if (until)
          await client.call(JobWait, { sessionId, jobId, timeoutMs: waitMs ?? MAX_WAIT_MS, until }, { signal });
        const read = await client.call(JobRead, { sessionId, jobId, waitMs: until ? undefined : waitMs }, { signal });
        const targets = escalation && read.job.sandbox ? widerTargets(read.job.sandbox.mode) : [];
        const escalationHint = targets.length > 0 ? escalationHintLine(targets) : undefined;
        return { text: renderProcessRead(read, { escalationHint }), isError: false, details: { kind: 'read', read } };
      }),
  };
}

/** `job_kill`: stops a job's whole process tree; answers once it is gone. */
export function createJobKillTool({ client, sessionId }: JobToolOptions): ModelTool<JobKillDetails> {
  return {
    name: 'job_kill',
    description: JOB_KILL_DESCRIPTION,
    inputSchema: jsonSchemaOf(jobArgsSchema()),
    execute: (raw: unknown, { signal }: ExecuteOptions = {}) =>
      callJobTool(raw, signal, validateJobArgs, async ({ job_id: jobId }) => {
        const { killed } = await client.call(JobKill, { sessionId, jobId }, { signal });
        const text = killed ? `killed background job ${jobId}` : `background job ${jobId} had already finished`;
        return { text, isError: false, details: { kind: 'kill', jobId, killed } };
      }),
  };
}

/** One short line per job for the model: id, status, exit facts, command (first line, shortened). */
export function renderJobList(jobs: JobSnapshot[]): string {
  if (jobs.length === 0) return 'no background jobs in this session';
  const command = (label: string) => {
    const line = label.split('\n', 1)[0]!;
    return line.length > 80 || line !== label ? `${line.slice(0, 77)}...` : line;
  };
  const rows = jobs.map((job) => [job.id, job.status, job.detail ?? '-', command(job.label)]);
  const all = [['id', 'status', 'exit', 'command'], ...rows];
  const widths = [0, 1, 2].map((column) => Math.max(...all.map((row) => row[column]!.length)));
  return all.map((row) => row.map((cell, i) => (i < 3 ? cell.padEnd(widths[i]!) : cell)).join('  ')).join('\n');
}

/** `job_list`: the session's background jobs as a short table. */
export function createJobListTool({ client, sessionId }: JobToolOptions): ModelTool<JobListDetails> {
  return {
    name: 'job_list',
    description: JOB_LIST_DESCRIPTION,
    inputSchema: jsonSchemaOf(jobListArgsSchema()),
    execute: (raw: unknown, { signal }: ExecuteOptions = {}) =>
      callJobTool(
        raw ?? {},
        signal,
        (args) => {
          const parsed = jobListArgsSchema().safeParse(args);
          return parsed.success ? { ok: true, args: {} } : { ok: false, message: parsed.error.issues[0]!.message };
        },
        async () => {
          const jobs = await client.call(JobList, { sessionId }, { signal });
          return { text: renderJobList(jobs), isError: false, details: { kind: 'list', jobs } };
        },
      ),
  };
}
