/** `execd wait JOB`: until the job ends; exits with its exit code. */
import { JobWait } from '../../protocol/methods.js';
import { commandHelp, endpointOf, ENDPOINT_OPTIONS, parseCommand, parseMs, type CommandRunner } from './args.js';
import { jobExitCode } from './exit-codes.js';
import { describeJob } from './job-format.js';
import { inSession, jobIdArgument, SESSION_HELP, SESSION_OPTION } from './session.js';

/** Help text of `execd wait`. */
export const WAIT_HELP = commandHelp({
  usage: 'wait JOB [--timeout MS] [--session ID] [--json]',
  about: `Waits until JOB ends, prints its status line and exits with its exit code (128+n after
signal n, 125 when it failed, 124 when it still runs after --timeout).`,
  options: [
    SESSION_HELP,
    '  --timeout MS       give up waiting after MS milliseconds',
    '  --json             print the job snapshot as JSON',
  ],
  examples: ['execd wait bash-1 --timeout 60000'],
});

/** Runs `execd wait`. */
export const waitCommand: CommandRunner = async (argv, globals) => {
  const { values, positionals } = parseCommand('wait', {
    args: argv,
    options: {
      ...ENDPOINT_OPTIONS,
      ...SESSION_OPTION,
      timeout: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    allowPositionals: true,
    strict: true,
  });
  const jobId = jobIdArgument('wait', positionals);
  const timeoutMs = parseMs('wait', '--timeout', values.timeout);
  const sessionId = values.session;
  const job = await inSession(
    endpointOf(values, globals),
    sessionId,
    (client) => client.call(JobWait, { sessionId, jobId, timeoutMs }),
    { command: 'wait' },
  );
  process.stdout.write(values.json ? `${JSON.stringify(job, null, 2)}\n` : `${describeJob(job)}\n`);
  return jobExitCode(job);
};
