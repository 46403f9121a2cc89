/** `execd jobs [--all]`: the background jobs of the session, or of every session. */
import { JobList } from '../../protocol/methods.js';
import { commandHelp, endpointOf, ENDPOINT_OPTIONS, parseCommand, type CommandRunner } from './args.js';
import { jobsTable } from './job-format.js';
import { forScope, SESSION_HELP, SESSION_OPTION } from './session.js';

/** Help text of `execd jobs`. */
export const JOBS_HELP = commandHelp({
  usage: 'jobs [--all] [--session ID] [--json]',
  about: 'Lists the background jobs of the session (id, status, owner, pid, start, detail, command).',
  options: [
    SESSION_HELP,
    "  --all              every session's jobs",
    '  --json             print the job snapshots as JSON',
  ],
  examples: ['execd jobs --all'],
});

/** Runs `execd jobs`. */
export const jobsCommand: CommandRunner = async (argv, globals) => {
  const { values } = parseCommand('jobs', {
    args: argv,
    options: {
      ...ENDPOINT_OPTIONS,
      ...SESSION_OPTION,
      all: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const jobs = await forScope(
    endpointOf(values, globals),
    values,
    (client, scope) => client.call(JobList, scope),
    () => [],
  );
  if (values.json) process.stdout.write(`${JSON.stringify(jobs, null, 2)}\n`);
  else if (jobs.length === 0) process.stdout.write(values.all ? 'no jobs\n' : `no jobs in session ${values.session}\n`);
  else process.stdout.write(jobsTable(jobs));
  return 0;
};
