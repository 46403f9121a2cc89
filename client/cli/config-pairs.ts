/** `KEY=VALUE` configuration pairs of `execd serve --config` and `execd config set`. */
import { configSchema, type ConfigPatch } from '../../protocol/config.js';
import { usageError } from './errors.js';

/** Every configuration key, in schema order. */
export function configKeys(): string[] {
  return Object.keys(configSchema().shape);
}

/**
 * Parses `KEY=VALUE` pairs into a config patch for subcommand `command`; values are JSON when they
 * parse as JSON (`timeoutMs=5000`, `enableRunInBackground=false`), else strings (`cwd=/srv`); an
 * empty value (`cwd=`) is `null`, which unsets an optional field. A pair without `=` or with an
 * unknown key is a usage error; the daemon validates the values.
 */
export function parseConfigPairs(pairs: string[], command: string, flag?: string): ConfigPatch {
  const keys = configKeys();
  const patch: Record<string, unknown> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) {
      const what = flag === undefined ? 'expected KEY=VALUE' : `${flag} expects KEY=VALUE`;
      throw usageError(command, `${what}, got ${JSON.stringify(pair)}`);
    }
    const key = pair.slice(0, eq);
    if (!keys.includes(key)) throw usageError(command, `unknown key ${JSON.stringify(key)}`);
    const raw = pair.slice(eq + 1);
    let value: unknown = raw === '' ? null : raw;
    try {
      value = JSON.parse(raw);
    } catch {
      // A bare string, e.g. a path.
    }
    patch[key] = value;
  }
  return patch;
}
