/**
 * Detecting a silent daemon (docs/deployment.md): a host that vanished sends nothing, not even a reset, and
 * TCP alone would keep the connection — and every pending call — open for many minutes.
 *
 * How: every byte the daemon sends counts as a sign of life. After a quarter of `keepAliveMs`
 * without one, the client sends a cheap request (`config/get`, answered from memory); when nothing
 * at all has arrived for `keepAliveMs` minus one check interval, the socket is destroyed, which
 * fails every pending call at once. So a peer that vanished is noticed within `keepAliveMs` of the
 * last bytes it sent, and a live but idle one costs one small request per quarter of `keepAliveMs`.
 */
import type { Socket } from 'node:net';
import { failSocket } from './transport-url.js';

/** Smallest `keepAliveMs`: the probe needs a round trip and the checks a few timer turns. */
export const MIN_KEEP_ALIVE_MS = 100;

/** Throws a RangeError naming the rule when `keepAliveMs` is not a usable interval. */
export function assertKeepAliveMs(keepAliveMs: number): void {
  // Above 2^31-1 ms Node fires a timer at once.
  if (!(Number.isFinite(keepAliveMs) && keepAliveMs >= MIN_KEEP_ALIVE_MS && keepAliveMs <= 2 ** 31 - 1)) {
    throw new RangeError(
      `keepAliveMs must be a number of milliseconds from ${MIN_KEEP_ALIVE_MS} to 2147483647, got ${keepAliveMs}`,
    );
  }
}

/**
 * Watches `socket`, sending `probe` when it is quiet and destroying it when the daemon stays
 * silent; returns a function that stops watching (also stopped when the socket closes).
 */
export function keepAlive(socket: Socket, keepAliveMs: number, probe: () => Promise<unknown>): () => void {
  assertKeepAliveMs(keepAliveMs);
  const tick = keepAliveMs / 4;
  let lastHeard = performance.now();
  let probing = false;
  const heard = () => (lastHeard = performance.now());
  socket.on('data', heard);
  const timer = setInterval(() => {
    const quiet = performance.now() - lastHeard;
    if (quiet >= keepAliveMs - tick) {
      stop();
      failSocket(socket, `the daemon sent nothing for ${Math.round(quiet)} ms (keepAliveMs ${keepAliveMs})`);
      return;
    }
    if (quiet >= tick && !probing) {
      probing = true;
      // Its answer (or failure) matters only as bytes on the socket; the close path reports loss.
      probe()
        .catch(() => {})
        .finally(() => (probing = false));
    }
  }, tick);
  // The watch alone never keeps a process alive.
  timer.unref();
  const stop = () => {
    clearInterval(timer);
    socket.off('data', heard);
  };
  socket.once('close', stop);
  return stop;
}
