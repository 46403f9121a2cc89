/** `execd serve`: run the daemon in the foreground. */
import { parseArgs } from 'node:util';
import type { ConfigPatch } from '../../protocol/config.js';
import { resolveEndpoint } from '../endpoint.js';
import { CliError } from './errors.js';

/** Help text of `execd serve`. */
export const SERVE_HELP = `usage: execd serve [--socket PATH] [--state-dir DIR] [--log-level LEVEL] [--config KEY=VALUE ...]

Runs the execd daemon in the foreground, logging JSON lines to stderr.

  --socket PATH        socket to listen on (default: $EXECD_SOCKET, else $XDG_RUNTIME_DIR/execd/execd.sock)
  --state-dir DIR      token, config.json, journal, spill files (default: $EXECD_STATE_DIR, else ~/.local/state/execd)
  --log-level LEVEL    trace, debug, info, warn, error (default: info)
  --config KEY=VALUE   a configuration field, e.g. --config timeoutMs=60000 (repeatable)
`;

/** Parses `KEY=VALUE` pairs into a config patch; values are JSON when they parse as JSON. */
export function parseConfigPairs(pairs: string[]): ConfigPatch {
  const patch: Record<string, unknown> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new CliError(`expected KEY=VALUE, got ${JSON.stringify(pair)}`);
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
  return patch as ConfigPatch;
}

/** Runs `execd serve`; resolves with the exit code once the daemon has shut down. */
export async function serveCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      socket: { type: 'string' },
      'state-dir': { type: 'string' },
      'log-level': { type: 'string', default: 'info' },
      config: { type: 'string', multiple: true, default: [] },
    },
    strict: true,
  });
  const endpoint = resolveEndpoint({ socketPath: values.socket, stateDir: values['state-dir'] });
  // The daemon's modules load only here: every client command starts without them (B5).
  const [{ createLogger }, { startDaemon }] = await Promise.all([import('../../daemon/logger.js'), import('../../daemon/server.js')]);
  const log = createLogger(values['log-level']!, { kind: 'stderr' });
  let daemon;
  try {
    daemon = await startDaemon({ ...endpoint, log, configFlags: parseConfigPairs(values.config!) });
  } catch (error) {
    throw new CliError(`execd serve: ${(error as Error).message}`);
  }
  // `on`, not `once`: a repeated signal during the shutdown must not kill the daemon before it has
  // killed every process tree (the shutdown is idempotent and bounded by graceMs).
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => void daemon.shutdown(signal));
  }
  await daemon.closed;
  return 0;
}
