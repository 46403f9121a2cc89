/** `execd schema`: print the protocol's JSON Schema document; needs no daemon. */
import { protocolJsonSchema } from '../../protocol/json-schema.js';
import { commandHelp, parseCommand, type CommandRunner } from './args.js';

/** Help text of `execd schema`. */
export const SCHEMA_HELP = commandHelp({
  usage: 'schema',
  about: `Prints one JSON Schema document of the protocol: every method's params and result and every
notification's params, generated from the declarations the daemon validates with. Needs no daemon.
PROTOCOL.md explains framing, the handshake and each method.`,
  endpoint: false,
  examples: ['execd schema | jq \'.methods["shell/run"].params\''],
});

/** Runs `execd schema`. */
export const schemaCommand: CommandRunner = (argv) => {
  parseCommand('schema', { args: argv, options: {}, allowPositionals: false, strict: true });
  process.stdout.write(`${JSON.stringify(protocolJsonSchema(), null, 2)}\n`);
  return Promise.resolve(0);
};
