/**
 * The listening socket (SPEC §2): a private directory, a 0600 socket, and the refusal to start when
 * another live daemon already listens there (a stale socket file is removed).
 */
import { chmodSync, existsSync, unlinkSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { dirname } from 'node:path';
import type { PlatformFacts } from '../protocol/platform.js';
import { checkPrivateDir } from './state-dir.js';

/** Resolves true when something accepts connections at `path`. */
export function socketIsLive(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
}

/** Listens at `path`; rejects with a one-line reason when the place is unsafe or taken. */
export async function listenPrivately(
  path: string,
  platform: PlatformFacts,
  onConnection: (socket: Socket) => void,
): Promise<Server> {
  if (platform.socketIsFile) {
    const refusal = checkPrivateDir(dirname(path));
    if (refusal) throw new Error(`refusing socket directory: ${refusal}`);
    if (existsSync(path)) {
      if (await socketIsLive(path)) throw new Error(`another execd is already listening on ${path}`);
      unlinkSync(path);
    }
  }
  const server = createServer({ noDelay: true } as object, onConnection);
  // The umask makes the socket 0600 from its first instant; the chmod states it explicitly.
  const previousMask = platform.socketIsFile ? process.umask(0o177) : undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } finally {
    if (previousMask !== undefined) process.umask(previousMask);
  }
  if (platform.socketIsFile) chmodSync(path, 0o600);
  return server;
}
