/** `execd kill JOB`: kill a background job's process tree. */
import { JobKill } from '../../protocol/methods.js';
import { commandHelp, type CommandRunner } from './args.js';
import { inSession, parseJobCommand, SESSION_HELP } from './session.js';

/** Help text of `execd kill`. */
export const KILL_HELP = commandHelp({
  usage: 'kill JOB [--session ID]',
  about:
    "Kills JOB's process tree (SIGTERM, then SIGKILL after graceMs) and returns once it is gone.\nIts output stays readable until it is released.",
  options: [SESSION_HELP],
  examples: ['execd kill bash-1'],
});

/** Runs `execd kill`. */
export const killCommand: CommandRunner = async (argv, globals) => {
  const { jobId, sessionId, endpoint } = parseJobCommand('kill', argv, globals);
  const { killed } = await inSession(endpoint, sessionId, (client) => client.call(JobKill, { sessionId, jobId }), {
    command: 'kill',
  });
  process.stdout.write(killed ? `killed ${jobId}\n` : `${jobId} had already ended\n`);
  return 0;
};
