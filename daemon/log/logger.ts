/**
 * pino logging: JSON lines to stderr in the foreground, to `<stateDir>/execd.log` when detached
 * (rotated, see `log-file.ts`). Warnings caused by unauthenticated peers are rate-limited and
 * aggregated (see `log-limiter.ts`). Never command output, environment values or the token.
 */
import { destination, pino, type Logger } from 'pino';
import { RotatingLogFile, type LogFileLimits } from './log-file.js';
import { PEER_NOISE, WarningLimiter, WINDOW_MS } from './log-limiter.js';

/** Where the log goes. */
export type LogTarget = { kind: 'stderr' } | { kind: 'file'; path: string };

/** The rotating file behind each file logger, so that the configuration can bound it later. */
const files = new WeakMap<Logger, RotatingLogFile>();

/** Creates the daemon's logger. */
export function createLogger(level: string, target: LogTarget): Logger {
  const limiter = new WarningLimiter();
  let summary: NodeJS.Timeout | undefined;
  let log: Logger | undefined;
  const report = () => {
    summary = undefined;
    const suppressed = limiter.takeSuppressed();
    if (suppressed) log?.warn({ suppressed, windowMs: WINDOW_MS }, 'peer warnings left out');
  };
  const options = {
    level,
    base: { pid: process.pid },
    hooks: {
      logMethod(this: Logger, args: unknown[], method: (...args: unknown[]) => void) {
        const message = typeof args[0] === 'string' ? args[0] : args[1];
        if (typeof message === 'string' && PEER_NOISE.has(message) && !limiter.allow(message, Date.now())) {
          // One summary per window, at its end.
          summary ??= setTimeout(report, WINDOW_MS).unref();
          return;
        }
        method.apply(this, args);
      },
    },
  };
  if (target.kind === 'file') {
    const file = new RotatingLogFile(target.path);
    log = pino(options, file);
    files.set(log, file);
    return log;
  }
  const stream = destination({ fd: 2, sync: true });
  // A log line that cannot be written is dropped: without a listener the write error would be
  // thrown from whatever code was logging, and end the daemon.
  stream.on('error', () => {});
  log = pino(options, stream);
  return log;
}

/** Bounds a file logger by the configuration from now on (a stderr logger is the caller's to bound). */
export function boundLogFile(log: Logger, limits: () => LogFileLimits): void {
  const file = files.get(log);
  if (file) file.limits = limits;
}

export type { Logger };
