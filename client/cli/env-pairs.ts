/** `--env KEY=VALUE` flags of `execd run` and `execd start`: extra variables of the command. */
import { usageError } from './errors.js';

/** A variable name a shell can export. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Parses `KEY=VALUE` pairs (the value may be empty or contain `=`); undefined when there are none. */
export function parseEnvPairs(pairs: readonly string[], command: string): Record<string, string> | undefined {
  if (pairs.length === 0) return undefined;
  const env: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    const name = eq < 0 ? pair : pair.slice(0, eq);
    if (eq < 0 || !ENV_NAME.test(name)) {
      throw usageError(command, `--env expects NAME=VALUE with a variable name, got ${JSON.stringify(pair)}`);
    }
    env[name] = pair.slice(eq + 1);
  }
  return env;
}

/** The help line of `--env`. */
export const ENV_HELP = `  --env NAME=VALUE   set a variable for the command (repeatable); otherwise the command gets the
                     daemon's environment (credential-like names removed), not this shell's`;
