/** `execd release JOB`: kill if running, forget the job, delete its log files. */
import { JobRelease } from '../../protocol/methods.js';
import { commandHelp, type CommandRunner } from './args.js';
import { inSession, parseJobCommand, SESSION_HELP } from './session.js';

/** Help text of `execd release`. */
export const RELEASE_HELP = commandHelp({
  usage: 'release JOB [--session ID]',
  about: 'Kills JOB if it still runs, forgets it and deletes its log files.',
  options: [SESSION_HELP],
  examples: ['execd release bash-1'],
});

/** Runs `execd release`. */
export const releaseCommand: CommandRunner = async (argv, globals) => {
  const { jobId, sessionId, endpoint } = parseJobCommand('release', argv, globals);
  await inSession(endpoint, sessionId, (client) => client.call(JobRelease, { sessionId, jobId }), {
    command: 'release',
  });
  process.stdout.write(`released ${jobId}\n`);
  return 0;
};
