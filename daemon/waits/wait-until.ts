/**
 * `job/wait` with `until` (docs/reconnect.md): until the job settles, its output matches a pattern, a TCP
 * port on the loopback accepts, a path exists, or the timeout passes — whichever comes first.
 * Conditions are polled every `POLL_MS` (an agent waits for a dev server in one call, and learns
 * of its port within a poll of it opening); a pattern is checked only when output grew, on the
 * tail of each stream, on the checker's thread.
 */
import { open, realpath, stat } from 'node:fs/promises';
import { connect } from 'node:net';
import { MAX_TIMER_MS } from '../../protocol/config.js';
import { ExecdError } from '../../protocol/errors.js';
import type { WaitEnd } from '../../protocol/types.js';
import type { Job } from '../jobs/job.js';
import { CHECK_BUDGET_MS, MAX_WINDOW_BYTES, type RegexChecker } from './regex-checker.js';

/** How often the conditions are looked at. */
export const POLL_MS = 25;

/** What a wait waits for besides the job settling. */
export interface Until {
  output?: string;
  port?: number;
  /** Absolute (already resolved against the session's cwd). */
  path?: string;
}

/** What the wait needs from the daemon. */
export interface WaitDeps {
  regex: RegexChecker;
  /** The session waiting: its pattern checks take their turn on the checker's thread with other sessions'. */
  sessionId: string;
  /**
   * Whether a real path is one the file methods hide (the state dir, the socket's directory, the
   * secret files): such a path never counts as existing, however it was named.
   */
  hidden: (real: string) => Promise<boolean>;
  /** Calls the listener when the caller gives up (cancel, or its connection closed). */
  cancelled: (listener: () => void) => void;
}

/** How long a probe that connected waits for the server to close its side before dropping it. */
const PROBE_LINGER_MS = 2_000;

/**
 * True once something accepts a TCP connection on the loopback `port`. A connected probe closes
 * the way a client that is done does: it sends its FIN and reads (and drops) whatever the server
 * writes until the server closes too. Destroying it at once would answer a server that writes
 * first (a greeting) with a reset, which a naive server does not survive.
 */
function portAccepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let linger: NodeJS.Timeout | undefined;
    const drop = () => {
      clearTimeout(linger);
      socket.destroy();
    };
    socket.once('connect', () => {
      resolve(true);
      socket.setTimeout(0);
      socket.end();
      socket.resume();
      linger = setTimeout(drop, PROBE_LINGER_MS);
    });
    // After the connect, an error (a reset from the server) or the close only ends the probe.
    socket.once('error', () => {
      resolve(false);
      drop();
    });
    socket.once('close', () => clearTimeout(linger));
    socket.setTimeout(1_000, () => {
      resolve(false);
      drop();
    });
  });
}

/**
 * Whether `path` exists, resolved like a file-API path: its real path (every symlink, `..` and
 * `/proc/self/root` followed), then the hidden-places check. A hidden path reads as absent, so a
 * wait can never serve as an existence test of the token or of another session's spill files.
 */
async function exists(path: string, hidden: WaitDeps['hidden']): Promise<boolean> {
  let real: string;
  try {
    real = await realpath(path);
  } catch {
    return false;
  }
  return !(await hidden(real));
}

/** The tail of one log file, read on from where the last look ended. */
class StreamWindow {
  private offset = 0;
  private window = Buffer.alloc(0);

  constructor(private readonly path: string) {}

  /** Reads what was appended; true when anything was. */
  async grow(): Promise<boolean> {
    let size: number;
    try {
      size = (await stat(this.path)).size;
    } catch {
      return false;
    }
    if (size <= this.offset) return false;
    const from = Math.max(this.offset, size - MAX_WINDOW_BYTES);
    const handle = await open(this.path, 'r');
    try {
      const fresh = Buffer.alloc(size - from);
      const { bytesRead } = await handle.read(fresh, 0, fresh.length, from);
      this.offset = from + bytesRead;
      const joined = Buffer.concat([this.window, fresh.subarray(0, bytesRead)]);
      this.window = joined.subarray(Math.max(0, joined.length - MAX_WINDOW_BYTES));
    } finally {
      await handle.close();
    }
    return true;
  }

  get text(): string {
    return this.window.toString('utf8');
  }
}

/** Waits as `job/wait` does; resolves with what ended the wait, or an error for a pattern that ran out of time. */
export async function waitUntil(
  job: Job,
  until: Until,
  timeoutMs: number | undefined,
  deps: WaitDeps,
): Promise<WaitEnd | ExecdError> {
  if (job.isSettled) return 'settled';
  const streams =
    until.output === undefined ? [] : Object.values(job.identity.logPaths).map((path) => new StreamWindow(path));
  let ended: WaitEnd | ExecdError | undefined;
  let finish: () => void = () => {};
  const over = new Promise<void>((resolve) => (finish = resolve));
  const end = (why: WaitEnd | ExecdError) => {
    ended ??= why;
    finish();
  };
  const timer =
    timeoutMs === undefined ? undefined : setTimeout(() => end('timeout'), Math.min(timeoutMs, MAX_TIMER_MS));
  timer?.unref();
  job.settled.then(
    () => end('settled'),
    () => end('settled'),
  );
  deps.cancelled(() => end('timeout'));

  const look = async (): Promise<WaitEnd | ExecdError | undefined> => {
    if (until.port !== undefined && (await portAccepts(until.port))) return 'port';
    if (until.path !== undefined && (await exists(until.path, deps.hidden))) return 'path';
    if (until.output !== undefined) {
      for (const stream of streams) {
        if (!(await stream.grow())) continue;
        const text = stream.text;
        const outcome = await deps.regex.test(until.output, text, deps.sessionId);
        if (outcome === 'timeout') {
          return new ExecdError(
            'INVALID_PARAMS',
            `until.output: the pattern ran longer than ${CHECK_BUDGET_MS} ms on ${Buffer.byteLength(text)} bytes of output; use a simpler pattern`,
          );
        }
        if (outcome) return 'output';
      }
    }
    return undefined;
  };

  const result = () => ended;
  try {
    for (;;) {
      const seen = await look();
      if (seen !== undefined) end(seen);
      const why = result();
      if (why !== undefined) return why;
      await Promise.race([over, new Promise((resolve) => setTimeout(resolve, POLL_MS).unref())]);
    }
  } finally {
    clearTimeout(timer);
  }
}
