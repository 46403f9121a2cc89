/** `execd jobs [--all]`: the background jobs of the session, or of every session. */
import { existsSync } from 'node:fs';
import { JobList } from '../../protocol/methods.js';
import { socketIsLive } from '../../shared/socket-probe.js';
import { statePaths } from '../../shared/state-dir.js';
import type { Endpoint } from '../endpoint.js';
import { commandHelp, endpointOf, ENDPOINT_OPTIONS, parseCommand, type CommandRunner } from './args.js';
import { jobsTable } from './job-format.js';
import { forScope, SESSION_HELP, SESSION_OPTION } from './session.js';

/** Help text of `execd jobs`. */
export const JOBS_HELP = commandHelp({
  usage: 'jobs [--all] [--session ID] [--json]',
  about: `Lists the background jobs of the session (id, status, owner, pid, start, detail, command).
With no daemon running and no job journal in the state dir, says so without starting one.`,
  options: [
    SESSION_HELP,
    "  --all              every session's jobs",
    '  --json             print the job snapshots as JSON',
  ],
  examples: ['execd jobs --all'],
});

/** True when no daemon answers locally and the state dir holds no job journal (no job could be listed). */
async function nothingToList(endpoint: Endpoint): Promise<boolean> {
  if (process.env.EXECD_URL) return false;
  if (existsSync(statePaths(endpoint.stateDir).journal)) return false;
  return !(await socketIsLive(endpoint.socketPath));
}

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
  const endpoint = endpointOf(values, globals);
  // No daemon and no journal an earlier one left: there is nothing to list, and nothing to start.
  const jobs = (await nothingToList(endpoint))
    ? []
    : await forScope(
        endpoint,
        values,
        (client, scope) => client.call(JobList, scope),
        () => [],
      );
  if (values.json) process.stdout.write(`${JSON.stringify(jobs, null, 2)}\n`);
  else if (jobs.length === 0) process.stdout.write(values.all ? 'no jobs\n' : `no jobs in session ${values.session}\n`);
  else process.stdout.write(jobsTable(jobs));
  return 0;
};
