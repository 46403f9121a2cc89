/** `execd clean [--session ID | --all]`: release every settled job at once, like pueue's `clean`. */
import { JobClean } from '../../protocol/methods.js';
import { commandHelp, endpointOf, ENDPOINT_OPTIONS, parseCommand, type CommandRunner } from './args.js';
import { forScope, SESSION_HELP, SESSION_OPTION } from './session.js';
import { formatBytes } from '../table.js';

/** Help text of `execd clean`. */
export const CLEAN_HELP = commandHelp({
  usage: 'clean [--session ID | --all] [--json]',
  about: `Releases every job of the session that has ended (completed, killed, failed or lost): forgets it and
deletes its log files, as 'execd release' does one by one. Running jobs are left alone. Prints how
many jobs were released and how many bytes of log files were freed.`,
  options: [
    SESSION_HELP,
    "  --all              every session's ended jobs",
    '  --json             print { released, bytes } as JSON',
  ],
  examples: ['execd clean', 'execd clean --all'],
});

/** `1 job`, `3 jobs`. */
function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/** Runs `execd clean`. */
export const cleanCommand: CommandRunner = async (argv, globals) => {
  const { values } = parseCommand('clean', {
    args: argv,
    options: {
      ...ENDPOINT_OPTIONS,
      ...SESSION_OPTION,
      all: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const result = await forScope(
    endpointOf(values, globals),
    values,
    (client, scope) => client.call(JobClean, scope),
    () => ({ released: 0, bytes: 0 }),
  );
  if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else {
    // One form: an exact count below a KiB, a rounded size from there.
    const freed = result.bytes < 1024 ? plural(result.bytes, 'byte') : formatBytes(result.bytes);
    process.stdout.write(`released ${plural(result.released, 'job')}, freed ${freed}\n`);
  }
  return 0;
};
