/** The job tools that complete background runs (SPEC §3.4): `job_output` and `job_kill`. */
import { JobKill, JobRead } from '../../protocol/methods.js';
import type { JobReadResult } from '../../protocol/types.js';
import type { ExecdClient } from '../connection.js';
import { escalationHintLine, renderProcessRead } from '../render.js';
import { jsonSchemaOf, jobArgsSchema, validateJobArgs } from './args.js';
import { JOB_KILL_DESCRIPTION, JOB_OUTPUT_DESCRIPTION } from './description.js';
import { widerTargets } from './escalation.js';
import { callFailure, throwIfAborted, type CallFailure } from './failure.js';
import type { ExecuteOptions, ModelTool, ToolResult } from './types.js';

/** The structured facts of a `job_output` call. */
export type JobOutputDetails =
  { kind: 'read'; read: JobReadResult } | { kind: 'invalid'; message: string } | CallFailure;

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
async function callJobTool<D>(
  raw: unknown,
  signal: AbortSignal | undefined,
  call: (jobId: string) => Promise<ToolResult<D>>,
): Promise<ToolResult<D | CallFailure | { kind: 'invalid'; message: string }>> {
  throwIfAborted(signal);
  const validated = validateJobArgs(raw);
  if (!validated.ok)
    return { text: validated.message, isError: true, details: { kind: 'invalid', message: validated.message } };
  try {
    const result = await call(validated.args.job_id);
    throwIfAborted(signal);
    return result;
  } catch (error) {
    throwIfAborted(signal);
    return callFailure(error);
  }
}

/** `job_output`: a consuming read of what a job printed since the last read. */
export function createJobOutputTool({ client, sessionId, escalation }: JobToolOptions): ModelTool<JobOutputDetails> {
  return {
    name: 'job_output',
    description: JOB_OUTPUT_DESCRIPTION,
    inputSchema: jsonSchemaOf(jobArgsSchema()),
    execute: (raw: unknown, { signal }: ExecuteOptions = {}) =>
      callJobTool(raw, signal, async (jobId) => {
        const read = await client.call(JobRead, { sessionId, jobId }, { signal });
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
      callJobTool(raw, signal, async (jobId) => {
        const { killed } = await client.call(JobKill, { sessionId, jobId }, { signal });
        const text = killed ? `killed background job ${jobId}` : `background job ${jobId} had already finished`;
        return { text, isError: false, details: { kind: 'kill', jobId, killed } };
      }),
  };
}
