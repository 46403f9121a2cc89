/** `execd write JOB [TEXT] [--eof]`: write to the stdin of a job started with `execd start --keep-stdin`. */
import { JobWrite } from '../../protocol/methods.js';
import { commandHelp, endpointOf, ENDPOINT_OPTIONS, parseCommand, type CommandRunner } from './args.js';
import { usageError } from './errors.js';
import { inSession, jobIdArgument, SESSION_HELP, SESSION_OPTION } from './session.js';

/** Help text of `execd write`. */
export const WRITE_HELP = commandHelp({
  usage: 'write JOB [TEXT] [--no-newline] [--eof] [--session ID]',
  about: `Writes TEXT and a newline to the stdin of JOB, a job started with 'execd start --keep-stdin';
with --eof, closes that stdin afterwards (the job reads end-of-file). Returns once the job's pipe
took the text. A job started without --keep-stdin is refused.`,
  options: [
    SESSION_HELP,
    '  --no-newline       write TEXT as it is, without the newline',
    "  --eof              close the job's stdin after TEXT (or alone, with no TEXT)",
  ],
  examples: ["JOB=$(execd start --keep-stdin -- 'read a; echo got $a'); execd write $JOB hello; execd wait $JOB"],
});

/** Runs `execd write`. */
export const writeCommand: CommandRunner = async (argv, globals) => {
  const { values, positionals } = parseCommand('write', {
    args: argv,
    options: {
      ...ENDPOINT_OPTIONS,
      ...SESSION_OPTION,
      'no-newline': { type: 'boolean', default: false },
      eof: { type: 'boolean', default: false },
    },
    allowPositionals: true,
    strict: true,
  });
  const [job, text, ...extra] = positionals;
  const jobId = jobIdArgument('write', job === undefined ? [] : [job]);
  if (extra.length > 0) throw usageError('write', `expected JOB and one TEXT, got ${positionals.length} arguments`);
  if (text === undefined && !values.eof) throw usageError('write', 'missing TEXT (or --eof to close the stdin)');
  const data = text === undefined ? '' : values['no-newline'] ? text : `${text}\n`;
  const sessionId = values.session;
  const { written } = await inSession(
    endpointOf(values, globals),
    sessionId,
    (client) => client.call(JobWrite, { sessionId, jobId, data, ...(values.eof && { eof: true }) }),
    { command: 'write' },
  );
  process.stdout.write(
    `wrote ${written} byte${written === 1 ? '' : 's'} to ${jobId}${values.eof ? ', closed its stdin' : ''}\n`,
  );
  return 0;
};
