/** `execd start -- COMMAND...`: start a background job and print its id. */
import { JobWait, ShellStart } from '../../protocol/methods.js';
import { commandHelp, endpointOf, ENDPOINT_OPTIONS, parseCommand, type CommandRunner } from './args.js';
import { commandFromWords, commandWordsHelp } from './command-words.js';
import { ENV_HELP, parseEnvPairs } from './env-pairs.js';
import { CliError, usageError } from './errors.js';
import { LIMIT_OPTIONS, LIMITS_HELP, limitsOf } from './limit-flags.js';
import { SANDBOX_HELP, sandboxPolicyOf } from './sandbox-flag.js';
import { defaultWorkdir, inSession, SESSION_HELP, SESSION_OPTION } from './session.js';

/** Help text of `execd start`. */
export const START_HELP = commandHelp({
  usage:
    'start [--session ID] [--workdir DIR] [--env NAME=VALUE]... [--sandbox MODE] [--keep-stdin] [--json]\n' +
    '                   [--memory SIZE] [--cpus N] [--pids N] -- COMMAND...',
  about: `Starts COMMAND with bash -c as a background job of the session and prints its id at once.
A job has no timeout: it runs until it ends, 'execd kill', its session closes or the daemon stops.
A job that failed at once (a missing --workdir, a sandbox that cannot run) still prints its id, then
the reason on stderr, and exits 125. The job's stdin is empty, or with --keep-stdin open for
'execd write JOB TEXT' until 'execd write JOB --eof'.

${commandWordsHelp('start')}`,
  options: [
    SESSION_HELP,
    "  --workdir DIR      working directory (default: the current directory; over EXECD_URL the session's)",
    ENV_HELP,
    SANDBOX_HELP,
    LIMITS_HELP,
    "  --keep-stdin       keep the job's stdin open for 'execd write' (else it is empty)",
    '  --json             print { jobId, pid, startedAt } as JSON',
  ],
  examples: ["JOB=$(execd start -- 'for i in 1 2 3; do echo $i; sleep 1; done'); execd read --follow $JOB"],
});

/** How long to wait for the snapshot of a job that failed at start (it is settled already). */
const FAILED_SNAPSHOT_WAIT_MS = 5_000;

/** Runs `execd start`. */
export const startCommand: CommandRunner = async (argv, globals) => {
  const { values, positionals } = parseCommand('start', {
    args: argv,
    options: {
      ...ENDPOINT_OPTIONS,
      ...SESSION_OPTION,
      workdir: { type: 'string' },
      env: { type: 'string', multiple: true, default: [] },
      sandbox: { type: 'string' },
      ...LIMIT_OPTIONS,
      'keep-stdin': { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length === 0) throw usageError('start', 'missing COMMAND (usage: execd start -- COMMAND...)');
  const env = parseEnvPairs(values.env, 'start');
  const sessionId = values.session;
  const workdir = values.workdir ?? defaultWorkdir();
  const sandboxPolicy = sandboxPolicyOf(values.sandbox, workdir, 'start');
  const keepStdinOpen = values['keep-stdin'] || undefined;
  const limits = limitsOf(values, 'start');
  const { started, failed } = await inSession(
    endpointOf(values, globals),
    sessionId,
    async (client) => {
      const command = commandFromWords(positionals, client.info.capabilities.shell);
      const started = await client.call(ShellStart, {
        sessionId,
        command,
        workdir,
        env,
        sandboxPolicy,
        keepStdinOpen,
        ...(limits && { limits }),
      });
      // A job whose process never started (pid 0) has settled `failed`; its detail says why.
      if (started.pid !== 0) return { started, failed: undefined };
      const job = await client.call(JobWait, { sessionId, jobId: started.jobId, timeoutMs: FAILED_SNAPSHOT_WAIT_MS });
      return { started, failed: job.status === 'failed' ? (job.detail ?? 'failed') : undefined };
    },
    { command: 'start', create: true },
  );
  process.stdout.write(values.json ? `${JSON.stringify(started, null, 2)}\n` : `${started.jobId}\n`);
  if (failed !== undefined) throw new CliError(`execd start: job ${started.jobId} failed: ${failed}`);
  return 0;
};
