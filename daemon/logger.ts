/**
 * pino logging: JSON lines to stderr in the foreground, to `<stateDir>/execd.log` when detached.
 * Never command output, environment values or the token.
 */
import { openSync } from 'node:fs';
import { destination, pino, type Logger } from 'pino';

/** Where the log goes. */
export type LogTarget = { kind: 'stderr' } | { kind: 'file'; path: string };

/** Creates the daemon's logger. */
export function createLogger(level: string, target: LogTarget): Logger {
  const fd = target.kind === 'stderr' ? 2 : openSync(target.path, 'a', 0o600);
  return pino({ level, base: { pid: process.pid } }, destination({ fd, sync: true }));
}

export type { Logger };
