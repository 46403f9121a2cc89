/** What the `execd term …` subcommands and `execd attach` share: the TERMINAL argument and the common flags. */
import { endpointOf, ENDPOINT_OPTIONS, parseCommand, type GlobalFlags } from './args.js';
import { usageError } from './errors.js';
import { SESSION_OPTION } from './session.js';

/** The one TERMINAL argument (`term-3`) of a terminal subcommand, at `index` of the positionals. */
export function terminalIdArgument(command: string, positionals: string[], count = 1): string {
  if (positionals.length === 0) throw usageError(command, 'missing TERMINAL (a terminal id such as term-1)');
  if (positionals.length > count)
    throw usageError(
      command,
      `expected ${count === 1 ? 'one TERMINAL' : `TERMINAL and ${count - 1} more`}, got ${positionals.length} arguments`,
    );
  const id = positionals[0]!;
  if (!/^term-\d{1,15}$/.test(id))
    throw usageError(command, `expected a terminal id such as term-1, got ${JSON.stringify(id)}`);
  return id;
}

/** Parses a terminal subcommand with `--session`, the endpoint flags and `extra` options. */
export function parseTerminalCommand<
  const O extends Record<string, { type: 'string' | 'boolean'; default?: string | boolean }>,
>(command: string, argv: string[], globals: GlobalFlags, extra: O) {
  const { values, positionals } = parseCommand(command, {
    args: argv,
    options: { ...ENDPOINT_OPTIONS, ...SESSION_OPTION, ...extra },
    allowPositionals: true,
    strict: true,
  });
  const flags = values as Record<string, string | boolean | undefined>;
  return {
    flags,
    positionals,
    sessionId: flags.session as string,
    endpoint: endpointOf(flags, globals),
  };
}
