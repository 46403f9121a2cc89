/**
 * Which daemon owns a state directory and a socket path: lock files held for the daemon's whole life
 * (see lock-file.ts). They are taken before anything reads or changes the state (journal replay,
 * stale socket removal), so a second daemon started by mistake or by a race refuses to start and
 * touches nothing; a lock left by a crashed daemon is stale and taken over.
 */
import { join } from 'node:path';
import type { PlatformFacts } from '../protocol/platform.js';
import { tryLock } from './lock-file.js';

/** The lock naming the daemon that owns a state directory. */
export function stateLockPath(stateDir: string): string {
  return join(stateDir, 'daemon.lock');
}

/** The lock naming the daemon that owns a socket path (only a filesystem socket needs one). */
export function socketLockPath(socketPath: string): string {
  return `${socketPath}.lock`;
}

/** The ownership of a daemon's places. */
export interface Ownership {
  /** Gives the places up; call after the socket file was removed. */
  release(): void;
}

/**
 * Takes ownership of the state dir and the socket path (whose directories must exist); throws a
 * one-line reason naming the live owner when another daemon has either.
 */
export function claimOwnership(stateDir: string, socketPath: string, platform: PlatformFacts): Ownership {
  const paths = [stateLockPath(stateDir), ...(platform.socketIsFile ? [socketLockPath(socketPath)] : [])];
  const held: Array<() => void> = [];
  const release = () => {
    for (const give of held.splice(0).reverse()) give();
  };
  for (const path of paths) {
    const lock = tryLock(path);
    if (!lock.acquired) {
      release();
      const place = path === paths[0] ? `state directory ${stateDir}` : `socket ${socketPath}`;
      throw new Error(`another execd (pid ${lock.holder.pid}) already owns the ${place}`);
    }
    held.push(lock.release);
  }
  return { release };
}
