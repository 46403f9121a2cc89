/**
 * Argument parsing shared by the subcommands: node's `parseArgs` with one-line usage errors, and
 * the endpoint flags (`--socket`, `--state-dir`) every client subcommand accepts, also before the
 * subcommand's name (`execd --socket P jobs`).
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { resolveEndpoint, type Endpoint } from '../endpoint.js';
import { usageError } from './errors.js';

/** Flags that locate the daemon, accepted by every client subcommand. */
export const ENDPOINT_OPTIONS = {
  socket: { type: 'string' },
  'state-dir': { type: 'string' },
} as const;

/** Help lines of the endpoint flags. */
export const ENDPOINT_HELP = `  --socket PATH      the daemon's socket (default: $EXECD_SOCKET, else the platform default)
  --state-dir DIR    the daemon's state dir (default: $EXECD_STATE_DIR, else the platform default)`;

/** Endpoint flags given before the subcommand's name. */
export interface GlobalFlags {
  socketPath?: string;
  stateDir?: string;
  /** `--servername NAME`: the name a remote daemon's certificate must carry (`EXECD_SERVERNAME`). */
  servername?: string;
  /** `--token-file FILE`: the file holding a remote daemon's token (`EXECD_TOKEN_FILE`). */
  tokenFile?: string;
}

/** The signature of every subcommand: its arguments and the global flags; resolves with the exit code. */
export type CommandRunner = (argv: string[], globals: GlobalFlags) => Promise<number>;

/**
 * Joins `--flag -5` into `--flag=-5` for string options, before `--`: node's parser takes a value
 * that starts with a dash for a flag ("argument is ambiguous"), and the number's own check should
 * say what is wrong with it.
 */
export function joinDashValues(args: readonly string[], options: ParseArgsConfig['options'] = {}): string[] {
  const out: string[] = [];
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    out.push(arg);
    if (arg === '--') {
      out.push(...args.slice(index + 1));
      break;
    }
    const name = /^--([^=]+)$/.exec(arg)?.[1];
    const next = args[index + 1];
    if (name !== undefined && options[name]?.type === 'string' && next !== undefined && /^-[\d.]/.test(next)) {
      out[out.length - 1] = `${arg}=${next}`;
      index++;
    }
  }
  return out;
}

/** Parses a subcommand's arguments; a bad flag becomes one usage line (exit 2). */
export function parseCommand<T extends ParseArgsConfig>(command: string, config: T): ReturnType<typeof parseArgs<T>> {
  try {
    if (config.args !== undefined) config = { ...config, args: joinDashValues(config.args, config.options) };
    return parseArgs(config);
  } catch (error) {
    // node's messages run on with advice about '--'; the first sentence names the problem.
    const message = (error as Error).message.split(/\.\s/)[0]!.replace(/\.$/, '');
    throw usageError(command, message.charAt(0).toLowerCase() + message.slice(1));
  }
}

/**
 * Splits leading `--socket P` / `--state-dir D` / `--servername NAME` / `--token-file FILE` (or
 * `--flag=value`) off the argument list.
 */
export function splitGlobalFlags(argv: string[]): { globals: GlobalFlags; rest: string[] } {
  const globals: GlobalFlags = {};
  let index = 0;
  while (index < argv.length) {
    const match = /^--(socket|state-dir|servername|token-file)(?:=(.*))?$/.exec(argv[index]!);
    if (!match) break;
    const value = match[2] ?? argv[index + 1];
    if (value === undefined) throw usageError('', `--${match[1]} needs a value`);
    if (match[1] === 'socket') globals.socketPath = value;
    else if (match[1] === 'state-dir') globals.stateDir = value;
    else if (match[1] === 'servername') globals.servername = value;
    else globals.tokenFile = value;
    index += match[2] === undefined ? 2 : 1;
  }
  return { globals, rest: argv.slice(index) };
}

/** The endpoint from a subcommand's flags, the global flags, the environment and the defaults. */
export function endpointOf(values: { socket?: string; 'state-dir'?: string }, globals: GlobalFlags): Endpoint {
  return resolveEndpoint({
    socketPath: values.socket ?? globals.socketPath,
    stateDir: values['state-dir'] ?? globals.stateDir,
  });
}

/** Parses a positive number of milliseconds given to `flag`. */
export function parseMs(command: string, flag: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!(Number.isFinite(value) && value > 0)) {
    throw usageError(command, `${flag} must be a positive number of milliseconds, got ${JSON.stringify(raw)}`);
  }
  return value;
}

/** Milliseconds per unit of a duration flag. */
const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/**
 * A duration flag (`500ms`, `10s`, `2m`, `1h`; a bare number is milliseconds) in milliseconds,
 * rounded to a whole one; a usage error naming the flag for anything else.
 */
export function parseDuration(command: string, flag: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(raw.trim());
  const value = match ? Math.round(Number(match[1]) * DURATION_UNITS[match[2] ?? 'ms']!) : NaN;
  if (!(Number.isFinite(value) && value > 0)) {
    throw usageError(command, `${flag} must be a positive duration (500ms, 10s, 2m, 1h), got ${JSON.stringify(raw)}`);
  }
  return value;
}

/** The parts of a subcommand's help text. */
export interface HelpParts {
  /** After `usage: execd `. */
  usage: string;
  about: string;
  /** Option lines, already indented and aligned. */
  options?: string[];
  /** Whether the endpoint flags apply (every client subcommand). */
  endpoint?: boolean;
  examples: string[];
}

/** Builds a subcommand's `--help` text in the one shape all of them share. */
export function commandHelp(parts: HelpParts): string {
  const options = [...(parts.options ?? []), ...(parts.endpoint === false ? [] : [ENDPOINT_HELP])];
  const sections = [`usage: execd ${parts.usage}`, parts.about];
  if (options.length > 0) sections.push(options.join('\n'));
  const [only, ...more] = parts.examples;
  sections.push(
    more.length === 0 ? `Example: ${only}` : `Examples:\n${parts.examples.map((example) => `  ${example}`).join('\n')}`,
  );
  return `${sections.join('\n\n')}\n`;
}
