/** `execd start -- COMMAND...`: start a background job and print its id. */
import { ShellStart } from '../../protocol/methods.js';
import { commandHelp, endpointOf, ENDPOINT_OPTIONS, parseCommand, type CommandRunner } from './args.js';
import { usageError } from './errors.js';
import { inSession, SESSION_HELP, SESSION_OPTION } from './session.js';

/** Help text of `execd start`. */
export const START_HELP = commandHelp({
  usage: 'start [--session ID] [--workdir DIR] [--json] -- COMMAND...',
  about: `Starts COMMAND with bash -c as a background job of the session and prints its id at once.
A job has no timeout: it runs until it ends, 'execd kill', its session closes or the daemon stops.`,
  options: [
    SESSION_HELP,
    '  --workdir DIR      working directory (default: the current directory)',
    '  --json             print { jobId, pid, startedAt } as JSON',
  ],
  examples: ["JOB=$(execd start -- 'for i in 1 2 3; do echo $i; sleep 1; done'); execd read --follow $JOB"],
});

/** Runs `execd start`. */
export const startCommand: CommandRunner = async (argv, globals) => {
  const { values, positionals } = parseCommand('start', {
    args: argv,
    options: {
      ...ENDPOINT_OPTIONS,
      ...SESSION_OPTION,
      workdir: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length === 0) throw usageError('start', 'missing COMMAND (usage: execd start -- COMMAND...)');
  const sessionId = values.session;
  const started = await inSession(endpointOf(values, globals), sessionId, (client) =>
    client.call(ShellStart, { sessionId, command: positionals.join(' '), workdir: values.workdir ?? process.cwd() }),
  );
  process.stdout.write(values.json ? `${JSON.stringify(started, null, 2)}\n` : `${started.jobId}\n`);
  return 0;
};
