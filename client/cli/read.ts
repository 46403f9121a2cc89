/** `execd read JOB [--follow]`: the job's new output (a consuming read), or all of it as it comes. */
import { JobRead, JobWait } from '../../protocol/methods.js';
import type { JobReadResult, JobSnapshot } from '../../protocol/types.js';
import type { ExecdClient } from '../connection.js';
import { lossyLine } from '../render.js';
import { commandHelp, endpointOf, ENDPOINT_OPTIONS, parseCommand, type CommandRunner } from './args.js';
import { jobExitCode } from './exit-codes.js';
import { jobMarker } from './job-format.js';
import { inSession, jobIdArgument, SESSION_HELP, SESSION_OPTION } from './session.js';

/** Help text of `execd read`. */
export const READ_HELP = commandHelp({
  usage: 'read JOB [--follow] [--session ID] [--json]',
  about: `Prints what JOB wrote since the last read (stdout, then [stderr] and stderr): reads consume,
so two reads never print the same bytes. With --follow, keeps printing until the job ends, then
prints its exit marker to stderr and exits with its exit code (128+n after signal n).`,
  options: [
    SESSION_HELP,
    '  --follow           stream the output until the job ends',
    '  --json             print each read result as one JSON line',
  ],
  examples: ['execd read bash-1', 'execd read --follow bash-1'],
});

/** How long one wait between two reads of `--follow` may last; the wait ends early when the job does. */
const FOLLOW_WAIT_MS = 100;

function settled(job: JobSnapshot): boolean {
  return job.status !== 'running' && job.status !== 'stopping';
}

function print(result: JobReadResult, json: boolean): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return;
  }
  process.stdout.write(result.delta);
  if (result.lossy) process.stderr.write(`${lossyLine(result)}\n`);
}

/** Reads until the job has settled and everything it wrote was printed; resolves with the last snapshot. */
async function follow(client: ExecdClient, sessionId: string, jobId: string, json: boolean): Promise<JobSnapshot> {
  for (;;) {
    const result = await client.call(JobRead, { sessionId, jobId });
    print(result, json);
    if (settled(result.job)) return result.job;
    await client.call(JobWait, { sessionId, jobId, timeoutMs: FOLLOW_WAIT_MS });
  }
}

/** Runs `execd read`. */
export const readCommand: CommandRunner = async (argv, globals) => {
  const { values, positionals } = parseCommand('read', {
    args: argv,
    options: {
      ...ENDPOINT_OPTIONS,
      ...SESSION_OPTION,
      follow: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
    allowPositionals: true,
    strict: true,
  });
  const jobId = jobIdArgument('read', positionals);
  const sessionId = values.session;
  return inSession(endpointOf(values, globals), sessionId, async (client) => {
    if (!values.follow) {
      print(await client.call(JobRead, { sessionId, jobId }), values.json);
      return 0;
    }
    const job = await follow(client, sessionId, jobId, values.json);
    const marker = jobMarker(job);
    if (marker && !values.json) process.stderr.write(`${marker}\n`);
    return jobExitCode(job);
  });
};
