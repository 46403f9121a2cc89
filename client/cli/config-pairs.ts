/** `KEY=VALUE` configuration pairs of `execd serve --config` and `execd config set`. */
import type { ConfigPatch } from '../../protocol/config.js';
import { CliError, EXIT_USAGE } from './errors.js';

/**
 * Parses `KEY=VALUE` pairs into a config patch; values are JSON when they parse as JSON
 * (`timeoutMs=5000`, `enableRunInBackground=false`), else strings (`cwd=/srv`). The daemon
 * validates the fields.
 */
export function parseConfigPairs(pairs: string[]): ConfigPatch {
  const patch: Record<string, unknown> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new CliError(`expected KEY=VALUE, got ${JSON.stringify(pair)}`, EXIT_USAGE);
    const key = pair.slice(0, eq);
    const raw = pair.slice(eq + 1);
    let value: unknown = raw;
    try {
      value = JSON.parse(raw);
    } catch {
      // A bare string, e.g. a path.
    }
    patch[key] = value;
  }
  return patch;
}
