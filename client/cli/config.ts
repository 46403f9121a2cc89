/** `execd config get [KEY]` and `execd config set KEY=VALUE...`: the daemon's live configuration. */
import { configSchema, type Config } from '../../protocol/config.js';
import { ConfigGet, ConfigSet } from '../../protocol/methods.js';
import { ExecdRpcError } from '../connection.js';
import { ADMIN_OPTIONS, withClient } from './autostart.js';
import { commandHelp, endpointOf, ENDPOINT_OPTIONS, parseCommand, type CommandRunner } from './args.js';
import { parseConfigPairs } from './config-pairs.js';
import { CliError, usageError } from './errors.js';
import { formatTable } from '../table.js';

/** Help text of `execd config`. */
export const CONFIG_HELP = commandHelp({
  usage: 'config get [KEY] [--json]\n       execd config set KEY=VALUE... [--persist]',
  about: `Shows or changes the daemon's configuration. A change applies to the next command; with
--persist it is also written to <state-dir>/config.json. A bad value is refused with a message
naming the field, and nothing changes. An empty value unsets an optional field (cwd=). Keys:
${Object.keys(configSchema().shape).join(', ')}.`,
  options: [
    '  --json             (get) print the configuration as JSON',
    '  --persist          (set) also write the change to <state-dir>/config.json',
  ],
  examples: ['execd config get timeoutMs', 'execd config set timeoutMs=60000 graceMs=1000'],
});

const KEYS = Object.keys(configSchema().shape) as Array<keyof Config>;

function show(value: unknown): string {
  if (value === undefined) return '(unset)';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The configuration as a KEY VALUE table, in schema order. */
export function formatConfig(config: Config, keys: readonly (keyof Config)[] = KEYS): string {
  return formatTable(
    ['KEY', 'VALUE'],
    keys.map((key) => [key, show(config[key])]),
  );
}

/** Runs `execd config`. */
export const configCommand: CommandRunner = async (argv, globals) => {
  const { values, positionals } = parseCommand('config', {
    args: argv,
    options: {
      ...ENDPOINT_OPTIONS,
      json: { type: 'boolean', default: false },
      persist: { type: 'boolean', default: false },
    },
    allowPositionals: true,
    strict: true,
  });
  const [action, ...rest] = positionals;
  const endpoint = endpointOf(values, globals);
  if (action === 'get') {
    if (rest.length > 1) throw usageError('config', `'config get' takes at most one KEY, got ${rest.length}`);
    const key = rest[0] as keyof Config | undefined;
    if (key !== undefined && !KEYS.includes(key)) throw usageError('config', `unknown key ${JSON.stringify(key)}`);
    const config = await withClient(endpoint, (client) => client.call(ConfigGet, {}), ADMIN_OPTIONS);
    if (values.json)
      process.stdout.write(`${JSON.stringify(key === undefined ? config : (config[key] ?? null), null, 2)}\n`);
    else process.stdout.write(key === undefined ? formatConfig(config) : `${show(config[key])}\n`);
    return 0;
  }
  if (action === 'set') {
    if (rest.length === 0) throw usageError('config', "'config set' needs at least one KEY=VALUE");
    const patch = parseConfigPairs(rest, 'config');
    const config = await withClient(
      endpoint,
      (client) => client.call(ConfigSet, { patch, persist: values.persist }),
      ADMIN_OPTIONS,
    ).catch((error: unknown) => {
      // The daemon names the field inside config/set's `patch` param; on the command line it is the KEY.
      if (error instanceof ExecdRpcError && error.message.startsWith('patch.'))
        throw new CliError(`execd config: ${error.message.slice('patch.'.length)}`);
      throw error;
    });
    process.stdout.write(formatConfig(config, Object.keys(patch) as Array<keyof Config>));
    return 0;
  }
  throw usageError(
    'config',
    action === undefined
      ? "missing 'get' or 'set'"
      : `unknown action ${JSON.stringify(action)}; expected 'get' or 'set'`,
  );
};
