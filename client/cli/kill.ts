/** `execd kill JOB`: kill a background job's process tree. */
import { JobKill } from '../../protocol/methods.js';
import { commandHelp, endpointOf, ENDPOINT_OPTIONS, parseCommand, type CommandRunner } from './args.js';
import { inSession, jobIdArgument, SESSION_HELP, SESSION_OPTION } from './session.js';

/** Help text of `execd kill`. */
export const KILL_HELP = commandHelp({
  usage: 'kill JOB [--session ID]',
  about: 'Kills JOB\'s process tree (SIGTERM, then SIGKILL after graceMs) and returns once it is gone.\nIts output stays readable until it is released.',
  options: [SESSION_HELP],
  examples: ['execd kill bash-1'],
});

/** Runs `execd kill`. */
export const killCommand: CommandRunner = async (argv, globals) => {
  const { values, positionals } = parseCommand('kill', {
    args: argv,
    options: { ...ENDPOINT_OPTIONS, ...SESSION_OPTION },
    allowPositionals: true,
    strict: true,
  });
  const jobId = jobIdArgument('kill', positionals);
  const sessionId = values.session!;
  const { killed } = await inSession(endpointOf(values, globals), sessionId, (client) => client.call(JobKill, { sessionId, jobId }));
  process.stdout.write(killed ? `killed ${jobId}\n` : `${jobId} had already ended\n`);
  return 0;
};
