/**
 * Idle exit for an auto-started daemon: once no client holds a session open and nothing runs (no
 * foreground run, no job, no leftover process) for a while, the daemon shuts down gracefully. A
 * later client starts a new one; the job journal keeps settled jobs readable across that.
 */
import type { DaemonContext } from '../context.js';

/** True when the daemon has nothing to do: no session held by a client, no process of its own. */
export function daemonIsIdle(context: DaemonContext): boolean {
  const sessionsHeld = context.sessions.all().some((session) => session.connections.size > 0);
  return !sessionsHeld && context.runs.size === 0 && context.processes.count === 0;
}

/** Longest pause between two idleness checks. */
const MAX_CHECK_INTERVAL_MS = 5_000;

/**
 * Calls `onIdle` once `isIdle` has held for `idleMs` without a break; returns the stop function.
 * Checks run a few times per `idleMs`, so the exit comes at most a quarter later than asked.
 */
export function watchIdle(isIdle: () => boolean, idleMs: number, onIdle: () => void): () => void {
  let idleSince: number | undefined;
  const timer = setInterval(
    () => {
      if (!isIdle()) {
        idleSince = undefined;
        return;
      }
      idleSince ??= Date.now();
      if (Date.now() - idleSince < idleMs) return;
      clearInterval(timer);
      onIdle();
    },
    Math.max(10, Math.min(idleMs / 4, MAX_CHECK_INTERVAL_MS)),
  );
  timer.unref();
  return () => clearInterval(timer);
}
