/** `execd release JOB`: kill if running, forget the job, delete its log files. */
import { JobRelease } from '../../protocol/methods.js';
import { commandHelp, endpointOf, ENDPOINT_OPTIONS, parseCommand, type CommandRunner } from './args.js';
import { inSession, jobIdArgument, SESSION_HELP, SESSION_OPTION } from './session.js';

/** Help text of `execd release`. */
export const RELEASE_HELP = commandHelp({
  usage: 'release JOB [--session ID]',
  about: 'Kills JOB if it still runs, forgets it and deletes its log files.',
  options: [SESSION_HELP],
  examples: ['execd release bash-1'],
});

/** Runs `execd release`. */
export const releaseCommand: CommandRunner = async (argv, globals) => {
  const { values, positionals } = parseCommand('release', {
    args: argv,
    options: { ...ENDPOINT_OPTIONS, ...SESSION_OPTION },
    allowPositionals: true,
    strict: true,
  });
  const jobId = jobIdArgument('release', positionals);
  const sessionId = values.session!;
  await inSession(endpointOf(values, globals), sessionId, (client) => client.call(JobRelease, { sessionId, jobId }));
  process.stdout.write(`released ${jobId}\n`);
  return 0;
};
