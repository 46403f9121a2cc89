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
  const stream = destination({ fd, sync: true });
  // A log line that cannot be written (a full disk) is dropped: without a listener the write
  // error would be thrown from whatever code was logging, and end the daemon.
  stream.on('error', () => {});
  return pino({ level, base: { pid: process.pid } }, stream);
}

export type { Logger };
