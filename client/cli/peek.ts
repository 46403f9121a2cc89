/** `execd peek JOB`: the job's output from explicit offsets, without consuming anything. */
import { JobPeek, MAX_PAGE_BYTES } from '../../protocol/methods.js';
import type { JobPeekResult } from '../../protocol/types.js';
import { commandHelp, endpointOf, ENDPOINT_OPTIONS, parseCommand, type CommandRunner } from './args.js';
import { usageError } from './errors.js';
import { inSession, jobIdArgument, SESSION_HELP, SESSION_OPTION } from './session.js';

/** Help text of `execd peek`. */
export const PEEK_HELP = commandHelp({
  usage: 'peek JOB [--stdout-offset N] [--stderr-offset N] [--session ID] [--json]',
  about: `Prints JOB's stdout (to stdout) and stderr (to stderr) from the given byte offsets up to what
it had written when peek began, read from its log files page by page, without consuming: a later
'execd read' still gets it all. Only output past maxSpillBytes (whose log file was deleted) can be
missing; peek then says so on stderr.`,
  options: [
    SESSION_HELP,
    '  --stdout-offset N  whole-stream byte offset to start stdout at (default: 0)',
    '  --stderr-offset N  whole-stream byte offset to start stderr at (default: 0)',
    '  --json             print one page { stdout, stderr, job } with the next offsets as JSON',
  ],
  examples: ['execd peek bash-1', 'execd peek --json --stdout-offset 1048576 bash-1'],
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
  const next = {
    stdout: offset('--stdout-offset', values['stdout-offset']) ?? 0,
    stderr: offset('--stderr-offset', values['stderr-offset']) ?? 0,
  };
  return inSession(
    endpointOf(values, globals),
    sessionId,
    async (client) => {
      const peek = (maxBytes?: number): Promise<JobPeekResult> =>
        client.call(JobPeek, { sessionId, jobId, stdoutOffset: next.stdout, stderrOffset: next.stderr, maxBytes });
      if (values.json) {
        process.stdout.write(`${JSON.stringify(await peek(), null, 2)}\n`);
        return 0;
      }
      let lossy = false;
      let end: { stdout: number; stderr: number } | undefined;
      for (;;) {
        const page = await peek(MAX_PAGE_BYTES);
        // The end is what the job had written at the first page: a running job would never let peek finish.
        end ??= { stdout: page.job.stdoutBytes, stderr: page.job.stderrBytes };
        process.stdout.write(page.stdout.text);
        process.stderr.write(page.stderr.text);
        lossy ||= page.stdout.lossy || page.stderr.lossy;
        const moved = page.stdout.nextOffset !== next.stdout || page.stderr.nextOffset !== next.stderr;
        next.stdout = page.stdout.nextOffset;
        next.stderr = page.stderr.nextOffset;
        if (!moved || (next.stdout >= end.stdout && next.stderr >= end.stderr)) break;
      }
      if (lossy) process.stderr.write('[some output passed maxSpillBytes and is lost: its log file was deleted]\n');
      return 0;
    },
    { command: 'peek' },
  );
};
