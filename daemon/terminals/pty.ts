/**
 * The PTY library, `@lydell/node-pty` (node-pty with prebuilt binaries), loaded on first use, and
 * the start-up check behind `capabilities.terminals`: can a PTY be opened here at all?
 */
import { createRequire } from 'node:module';
import type * as NodePty from '@lydell/node-pty';

/** The node-pty module. */
export type PtyModule = typeof NodePty;
/** One PTY with its program. */
export type Pty = NodePty.IPty;

let loaded: PtyModule | undefined;

/** Loads node-pty (CommonJS, native); throws when it cannot be loaded here. */
export function loadPty(): PtyModule {
  loaded ??= createRequire(import.meta.url)('@lydell/node-pty') as PtyModule;
  return loaded;
}

/** How long the probe's PTY may take to run `true`. */
const PROBE_TIMEOUT_MS = 10_000;

/**
 * Opens one PTY running `true` and waits for it to exit: resolves undefined when terminals work,
 * else the reason (the library does not load, no PTY can be allocated, the program never ran).
 */
export async function probePty(): Promise<string | undefined> {
  let pty: Pty;
  try {
    pty = loadPty().spawn('true', [], {
      cols: 20,
      rows: 5,
      encoding: null,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    });
  } catch (error) {
    return `cannot open a PTY: ${(error as Error).message}`;
  }
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      pty.kill('SIGKILL');
      resolve('a PTY program did not exit within 10 s');
    }, PROBE_TIMEOUT_MS);
    timer.unref();
    pty.onExit(({ exitCode }) => {
      clearTimeout(timer);
      resolve(exitCode === 0 ? undefined : `a PTY program failed (exit code ${exitCode})`);
    });
  });
}

/**
 * The PTY master as a non-blocking descriptor, for `InputQueue`; undefined where the library
 * offers none (Windows), and then input goes through the library's own write. The library's
 * socket would spin on EAGAIN once the descriptor is non-blocking, so after this call every write
 * must go through the queue.
 */
export function nonBlockingMaster(pty: Pty): number | undefined {
  const socket = (pty as unknown as { _socket?: { _handle?: { setBlocking?: (blocking: boolean) => number } } })
    ._socket;
  const fd = (pty as unknown as { fd?: unknown }).fd;
  if (typeof fd !== 'number' || typeof socket?._handle?.setBlocking !== 'function') return undefined;
  return socket._handle.setBlocking(false) === 0 ? fd : undefined;
}
