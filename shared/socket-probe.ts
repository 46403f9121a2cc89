/** Whether a daemon answers at a socket path: what auto-start, `execd stop` and the daemon's own start-up ask. */
import { connect } from 'node:net';

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
