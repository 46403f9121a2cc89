/**
 * Listening order (issue 26.13): every network listener is bound before the local socket accepts,
 * so a listener that cannot bind fails the start before any client could have used the socket.
 */
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, constants, existsSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { CLI } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';

/** True when a connection to the Unix socket `path` succeeds now. */
function accepts(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(path);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('listening order', { timeout: 60_000 }, () => {
  it('the socket accepts nothing while a TLS listener is still being set up, nor after it failed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'execd-listen-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    // TLS material that is not there yet: the daemon's setup of the listener waits on the FIFOs.
    const cert = join(dir, 'cert.pem');
    const key = join(dir, 'key.pem');
    execFileSync('mkfifo', [cert, key]);
    const socketPath = join(dir, 'execd.sock');
    const args = ['serve', '--socket', socketPath, '--state-dir', join(dir, 'state')];
    args.push('--listen', 'tls://127.0.0.1:0', '--tls-cert', cert, '--tls-key', key);
    const proc = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    onTestFinished(() => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    });
    let stderr = '';
    proc.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    const exited = new Promise<number | null>((resolve) => proc.once('exit', resolve));
    // The daemon has reached the TLS setup once the FIFO has a reader (a writer can open it then).
    const openWriter = (path: string) => {
      try {
        return openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
      } catch {
        return undefined;
      }
    };
    let certWriter: number | undefined;
    await waitFor(() => (certWriter = openWriter(cert)) !== undefined, 'the daemon reads the certificate', {
      timeoutMs: 30_000,
    });
    let accepted = 0;
    let probes = 0;
    const until = Date.now() + 1_000;
    while (Date.now() < until) {
      probes += 1;
      if (await accepts(socketPath)) accepted += 1;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // Now the material arrives, and it is not PEM: the start fails.
    writeSync(certWriter!, 'garbage\n');
    closeSync(certWriter!);
    let keyWriter: number | undefined;
    await waitFor(() => (keyWriter = openWriter(key)) !== undefined, 'the daemon reads the key', { timeoutMs: 30_000 });
    writeSync(keyWriter!, 'garbage\n');
    closeSync(keyWriter!);
    expect(await exited).toBe(125);
    console.log(`listen order: ${probes} probes of the socket while TLS was set up, ${accepted} accepted`);
    expect(accepted).toBe(0);
    expect(existsSync(socketPath)).toBe(false);
  });
});
