/**
 * A Unix-socket proxy in front of a daemon's socket that a test cuts at will: `cut()` destroys
 * every proxied pair, the client's side first, as a dropped link would.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';

/** A proxy listening on `path`. */
export interface CutProxy {
  path: string;
  /** Connections proxied so far. */
  accepted(): number;
  /** Destroys every open pair; resolves with how many there were. */
  cut(): number;
  close(): Promise<void>;
}

/** Starts a proxy to `target` in `dir`, closed when the test finishes. */
export async function startCutProxy(dir: string, target: string): Promise<CutProxy> {
  const path = join(dir, 'proxy.sock');
  const pairs = new Set<[Socket, Socket]>();
  let accepted = 0;
  const server: Server = createServer((client) => {
    accepted += 1;
    const upstream = connect(target);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  const proxy: CutProxy = {
    path,
    accepted: () => accepted,
    cut() {
      const open = [...pairs];
      for (const [client, upstream] of open) {
        client.destroy();
        upstream.destroy();
      }
      pairs.clear();
      return open.length;
    },
    close: () =>
      new Promise((resolve) => {
        proxy.cut();
        server.close(() => resolve());
      }),
  };
  onTestFinished(() => proxy.close());
  return proxy;
}
