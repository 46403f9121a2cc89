/**
 * The listening socket (PROTOCOL.md): a private directory, a 0600 socket, and the refusal to start when
 * another live daemon already listens there (a stale socket file is removed).
 *
 * Removing a stale file is safe only for the owner of the socket path (ownership.ts): the caller
 * takes that ownership first, so two daemons starting at once never unlink each other's socket.
 */
import { chmodSync, existsSync, unlinkSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { dirname } from 'node:path';
import type { PlatformFacts } from '../../protocol/platform.js';
import { socketIsLive } from '../../shared/socket-probe.js';
import { checkPrivateDir } from '../../shared/state-dir.js';

/** Checks the socket's directory (creating it 0700); returns a reason to refuse it. */
export function checkSocketDir(path: string, platform: PlatformFacts): string | undefined {
  if (!platform.socketIsFile) return undefined;
  const refusal = checkPrivateDir(dirname(path), platform);
  return refusal && `refusing socket directory: ${refusal}`;
}

/** A listening server. */
export interface PrivateListener {
  server: Server;
  /** Removes the socket file; call once the server is closed. */
  removeSocket(): void;
}

/**
 * Listens at `path`, whose ownership the caller holds; rejects with a one-line reason when the
 * place is unsafe or taken. With `fd` (a socket an upgrade in place handed over, bound to `path`
 * already) it listens on that descriptor instead of binding.
 */
export async function listenPrivately(
  path: string,
  platform: PlatformFacts,
  onConnection: (socket: Socket) => void,
  fd?: number,
): Promise<PrivateListener> {
  if (platform.socketIsFile && fd === undefined) {
    const refusal = checkSocketDir(path, platform);
    if (refusal) throw new Error(refusal);
    if (existsSync(path)) {
      // A daemon that predates ownership locks could still listen there: never take its socket.
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
      server.listen(fd === undefined ? path : { fd }, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } finally {
    if (previousMask !== undefined) process.umask(previousMask);
  }
  // A failed accept (EMFILE: no descriptor left) is an 'error' of the server: without a listener
  // it would end the daemon. libuv keeps listening; the client sees its connect fail or wait.
  server.on('error', () => {});
  if (platform.socketIsFile) chmodSync(path, 0o600);
  const removeSocket = () => {
    if (!platform.socketIsFile) return;
    try {
      unlinkSync(path);
    } catch {
      // Already removed.
    }
  };
  return { server, removeSocket };
}
