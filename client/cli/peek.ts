/** `execd peek JOB`: the job's output at explicit offsets, without consuming anything. */
import { JobPeek } from '../../protocol/methods.js';
import { commandHelp, endpointOf, ENDPOINT_OPTIONS, parseCommand, type CommandRunner } from './args.js';
import { usageError } from './errors.js';
import { inSession, jobIdArgument, SESSION_HELP, SESSION_OPTION } from './session.js';

/** Help text of `execd peek`. */
export const PEEK_HELP = commandHelp({
  usage: 'peek JOB [--stdout-offset N] [--stderr-offset N] [--session ID] [--json]',
  about: `Prints JOB's stdout (to stdout) and stderr (to stderr) from the given byte offsets, as far as
the daemon still holds them in memory, without consuming: a later 'execd read' still gets it all.`,
  options: [
    SESSION_HELP,
    '  --stdout-offset N  whole-stream byte offset to start stdout at (default: 0)',
    '  --stderr-offset N  whole-stream byte offset to start stderr at (default: 0)',
    '  --json             print { stdout, stderr, job } with the next offsets as JSON',
  ],
  examples: ['execd peek bash-1'],
});

function offset(flag: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0)
    throw usageError('peek', `${flag} must be a non-negative integer, got ${JSON.stringify(raw)}`);
  return value;
}

/** Runs `execd peek`. */
export const peekCommand: CommandRunner = async (argv, globals) => {
  const { values, positionals } = parseCommand('peek', {
    args: argv,
    options: {
      ...ENDPOINT_OPTIONS,
      ...SESSION_OPTION,
      'stdout-offset': { type: 'string' },
      'stderr-offset': { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    allowPositionals: true,
    strict: true,
  });
  const jobId = jobIdArgument('peek', positionals);
  const sessionId = values.session;
  const stdoutOffset = offset('--stdout-offset', values['stdout-offset']);
  const stderrOffset = offset('--stderr-offset', values['stderr-offset']);
  const peeked = await inSession(endpointOf(values, globals), sessionId, (client) =>
    client.call(JobPeek, { sessionId, jobId, stdoutOffset, stderrOffset }),
  );
  if (values.json) {
    process.stdout.write(`${JSON.stringify(peeked, null, 2)}\n`);
    return 0;
  }
  process.stdout.write(peeked.stdout.text);
  process.stderr.write(peeked.stderr.text);
  if (peeked.stdout.lossy || peeked.stderr.lossy) {
    process.stderr.write("[the start of this output was dropped from memory; the job's log files hold all of it]\n");
  }
  return 0;
};
