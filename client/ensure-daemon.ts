/**
 * Starting a daemon for a client that found none listening (docs/cli.md): `execd serve --detach` in
 * the background, then waiting for its socket. Loaded only on that path (see `autostart.ts`), as
 * it pulls in the daemon's lock and state-dir modules that a client talking to a running daemon
 * never needs.
 *
 * Racing clients end with one daemon: starting is serialised by `<stateDir>/autostart.lock`
 * (held only while starting; a dead starter's lock is stale and taken over), each starter checks
 * the socket again under the lock, and the daemon itself refuses to start when another one owns
 * its state dir or socket (ownership.ts) — in which case the client waits for that one's socket.
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { liveHolder, tryLock } from '../shared/lock-file.js';
import { socketLockPath, stateLockPath } from '../shared/ownership.js';
import { socketIsLive } from '../shared/socket-probe.js';
import { checkPrivateDir } from '../shared/state-dir.js';
import { PLATFORM } from '../protocol/platform.js';
import type { Endpoint } from './endpoint.js';
import { DAEMON_START_TIMEOUT_MS, DaemonStartError, startDetached } from './detach.js';
import { AutostartError } from './autostart-error.js';

/** Idle exit of an auto-started daemon unless `EXECD_IDLE_EXIT_MS` says otherwise (0: never). */
export const DEFAULT_AUTOSTART_IDLE_EXIT_MS = 30 * 60_000;

const POLL_MS = 20;

/** The `serve` flags of an auto-started daemon. */
export function autostartServeArgs(env: NodeJS.ProcessEnv = process.env): string[] {
  const raw = env.EXECD_IDLE_EXIT_MS;
  const idleMs = raw === undefined || raw === '' ? DEFAULT_AUTOSTART_IDLE_EXIT_MS : Number(raw);
  if (!(Number.isFinite(idleMs) && idleMs >= 0)) {
    throw new AutostartError(
      `execd: EXECD_IDLE_EXIT_MS must be a non-negative number of milliseconds, got ${JSON.stringify(raw)}`,
    );
  }
  return idleMs > 0 ? ['--idle-exit-ms', String(idleMs)] : [];
}

/** True while some live daemon owns the endpoint's state dir or socket (it may be starting). */
function ownerAlive(endpoint: Endpoint): boolean {
  if (liveHolder(stateLockPath(endpoint.stateDir))) return true;
  return PLATFORM.socketIsFile && liveHolder(socketLockPath(endpoint.socketPath)) !== undefined;
}

/** How long the owner of a state dir is given to take its socket's lock too (it takes both at once). */
const SOCKET_CLAIM_MS = 200;

/**
 * When the live daemon that owns the endpoint's state dir does not own its socket (a wrong
 * socket/state-dir pairing): the hint naming how to reach it; undefined when it owns both, or
 * may be about to (a daemon takes the state dir's lock, then the socket's, in one step).
 */
async function ownerServesElsewhere(endpoint: Endpoint): Promise<string | undefined> {
  if (!PLATFORM.socketIsFile) return undefined;
  for (const wait of [0, SOCKET_CLAIM_MS]) {
    await sleep(wait);
    const owner = liveHolder(stateLockPath(endpoint.stateDir));
    if (!owner) return undefined;
    const socketOwner = liveHolder(socketLockPath(endpoint.socketPath));
    if (socketOwner?.pid === owner.pid) return undefined;
  }
  return ' (give the --socket it was started with, or another --state-dir)';
}

async function waitForSocket(endpoint: Endpoint, deadline: number, what: string): Promise<void> {
  while (!(await socketIsLive(endpoint.socketPath))) {
    if (Date.now() > deadline)
      throw new AutostartError(`execd: no daemon listening on ${endpoint.socketPath} after waiting for ${what}`);
    await sleep(POLL_MS);
  }
}

/** Makes sure a daemon listens on the endpoint, starting one in the background if needed. */
export async function ensureDaemon(endpoint: Endpoint): Promise<void> {
  const refusal = checkPrivateDir(endpoint.stateDir);
  if (refusal) throw new AutostartError(`execd: refusing state directory: ${refusal}`);
  const lockPath = join(endpoint.stateDir, 'autostart.lock');
  const deadline = Date.now() + DAEMON_START_TIMEOUT_MS;
  const serveArgs = autostartServeArgs();
  for (;;) {
    if (await socketIsLive(endpoint.socketPath)) return;
    const lock = tryLock(lockPath);
    if (lock.acquired) {
      try {
        if (await socketIsLive(endpoint.socketPath)) return;
        await startDetached(endpoint, serveArgs);
      } catch (error) {
        // Another daemon (e.g. an `execd serve` by hand) owns the place and is starting: join it.
        if (!(error instanceof DaemonStartError) || !ownerAlive(endpoint)) throw error;
        // One that owns the state dir but not this socket serves another socket: no wait helps.
        const elsewhere = await ownerServesElsewhere(endpoint);
        if (elsewhere) {
          const reason = error.message.replace(/^execd serve: /, '');
          throw new AutostartError(`execd: ${reason}; it does not serve ${endpoint.socketPath}${elsewhere}`);
        }
        await waitForSocket(endpoint, deadline, 'the daemon that owns it');
      } finally {
        lock.release();
      }
      return;
    }
    if (Date.now() > deadline) {
      throw new AutostartError(
        `execd: no daemon listening on ${endpoint.socketPath} after waiting for the one pid ${lock.holder.pid} starts`,
      );
    }
    await sleep(POLL_MS);
  }
}
