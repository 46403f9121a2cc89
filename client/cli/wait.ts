/** `execd wait JOB`: until the job ends (or a condition holds, docs/reconnect.md); exits with its exit code, or 0 for the condition. */
import { JobWait } from '../../protocol/methods.js';
import { commandHelp, endpointOf, ENDPOINT_OPTIONS, parseCommand, parseMs, type CommandRunner } from './args.js';
import { usageError } from './errors.js';
import { jobExitCode } from './exit-codes.js';
import { describeJob } from './job-format.js';
import { inSession, jobIdArgument, SESSION_HELP, SESSION_OPTION } from './session.js';

/** Help text of `execd wait`. */
export const WAIT_HELP = commandHelp({
  usage: 'wait JOB [--match RE] [--port N] [--path P] [--timeout MS] [--session ID] [--json]',
  about: `Waits until JOB ends, prints its status line and exits with its exit code (128+n after
signal n, 125 when it failed, 124 when it still runs after --timeout). With --match, --port or
--path it also stops, exiting 0, as soon as the condition holds: the job's output matches RE,
something accepts TCP connections on 127.0.0.1:N, or P exists.`,
  options: [
    SESSION_HELP,
    "  --match RE         stop when the job's output matches the regular expression RE",
    '  --port N           stop when TCP port N on the loopback accepts a connection',
    '  --path P           stop when path P (relative to the session cwd) exists',
    '  --timeout MS       give up waiting after MS milliseconds',
    '  --json             print the job snapshot as JSON',
  ],
  examples: ['execd wait bash-1 --timeout 60000', 'execd wait bash-2 --port 3000 --timeout 60000'],
});

/** Runs `execd wait`. */
export const waitCommand: CommandRunner = async (argv, globals) => {
  const { values, positionals } = parseCommand('wait', {
    args: argv,
    options: {
      ...ENDPOINT_OPTIONS,
      ...SESSION_OPTION,
      timeout: { type: 'string' },
      match: { type: 'string' },
      port: { type: 'string' },
      path: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    allowPositionals: true,
    strict: true,
  });
  const jobId = jobIdArgument('wait', positionals);
  const timeoutMs = parseMs('wait', '--timeout', values.timeout);
  const sessionId = values.session;
  const until = untilOf(values);
  const job = await inSession(
    endpointOf(values, globals),
    sessionId,
    (client) => client.call(JobWait, { sessionId, jobId, timeoutMs, ...(until && { until }) }),
    { command: 'wait' },
  );
  const byCondition = job.endedBy !== 'settled' && job.endedBy !== 'timeout';
  const line = byCondition ? `${describeJob(job)} (${job.endedBy})` : describeJob(job);
  process.stdout.write(values.json ? `${JSON.stringify(job, null, 2)}\n` : `${line}\n`);
  return byCondition ? 0 : jobExitCode(job);
};

/** The `until` of `--match`, `--port` and `--path`; undefined when none is given. */
function untilOf(values: { match?: string; port?: string; path?: string }) {
  const { match, path } = values;
  let port: number | undefined;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!(Number.isInteger(port) && port >= 1 && port <= 65_535)) {
      throw usageError('wait', `--port must be a TCP port from 1 to 65535, got ${JSON.stringify(values.port)}`);
    }
  }
  if (match === undefined && port === undefined && path === undefined) return undefined;
  return { output: match, port, path };
}
