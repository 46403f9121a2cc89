/**
 * `--memory`, `--cpus` and `--pids` of `execd run` and `execd start`: the request's own resource
 * limits (docs/limits.md).
 */
import { parseSize, type SessionLimits, type UnitLimits } from '../../protocol/limits.js';
import { usageError } from './errors.js';

/** The options the limit flags add to a command's parser. */
export const LIMIT_OPTIONS = {
  memory: { type: 'string' },
  cpus: { type: 'string' },
  pids: { type: 'string' },
} as const;

/** The help lines of the limit flags. */
export const LIMITS_HELP = `  --memory SIZE      memory limit of this command (512M, 2G, bytes); past it the kernel kills it
  --cpus N           CPU limit, a fraction of CPUs (0.5: half of one core)
  --pids N           processes and threads the command may have at once
                     (each at most the session's limits and the daemon's maxLimits)`;

/** The limits the flags ask for; undefined without any. */
export function limitsOf(
  values: { memory?: string; cpus?: string; pids?: string },
  command: string,
): UnitLimits | undefined {
  const limits: UnitLimits = {};
  if (values.memory !== undefined) {
    const bytes = parseSize(values.memory);
    if (bytes === undefined)
      throw usageError(command, `--memory must be a size such as 512M or 2G, got ${JSON.stringify(values.memory)}`);
    limits.memoryBytes = bytes;
  }
  if (values.cpus !== undefined) {
    const cpus = Number(values.cpus);
    if (!(Number.isFinite(cpus) && cpus > 0))
      throw usageError(command, `--cpus must be a positive number, got ${JSON.stringify(values.cpus)}`);
    limits.cpus = cpus;
  }
  if (values.pids !== undefined) {
    const pids = Number(values.pids);
    if (!Number.isInteger(pids) || pids < 1)
      throw usageError(command, `--pids must be a positive whole number, got ${JSON.stringify(values.pids)}`);
    limits.pids = pids;
  }
  return Object.keys(limits).length === 0 ? undefined : limits;
}

/** With `--session-memory SIZE` too (`execd mcp`): a session's limits; undefined without any. */
export function sessionLimitsOf(
  values: { memory?: string; cpus?: string; pids?: string; 'session-memory'?: string },
  command: string,
): SessionLimits | undefined {
  const limits: SessionLimits = { ...limitsOf(values, command) };
  const total = values['session-memory'];
  if (total !== undefined) {
    const bytes = parseSize(total);
    if (bytes === undefined)
      throw usageError(command, `--session-memory must be a size such as 2G, got ${JSON.stringify(total)}`);
    limits.sessionMemoryBytes = bytes;
  }
  return Object.keys(limits).length === 0 ? undefined : limits;
}
