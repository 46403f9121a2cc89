/**
 * B11 (SPEC §8): 256 MiB uploaded then downloaded through the file API over TLS on loopback,
 * against a raw TLS socket on loopback carrying the same bytes (file to socket to file, each way)
 * in the same run. Figures: the throughput ratio (target ≥ 0.8), the daemon's peak RSS growth
 * during the transfers (target ≤ 64 MB), and whether the bytes came back identical.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, readFileSync } from 'node:fs';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { connect as tlsConnect, createServer, type TLSSocket } from 'node:tls';
import { connect } from '../client/connect.js';
import { SessionOpen } from '../protocol/methods.js';
import { makeCertificates } from './b1-tls.js';
import { startTlsBenchDaemon, type BenchDaemon } from './daemon.js';
import { readMemory, resetPeakMemory } from './proc-stats.js';
import type { Figure } from './stats.js';

const MiB = 1024 * 1024;
const SIZE = 256 * MiB;

async function sha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Milliseconds to carry `source` to `sink` over a raw TLS socket on loopback, up and then down. */
async function rawTlsRoundTrip(
  pki: { ca: string; cert: string; key: string },
  source: string,
  dir: string,
): Promise<number> {
  let direction: 'up' | 'down' = 'up';
  const server = createServer({ cert: readFileSync(pki.cert), key: readFileSync(pki.key) }, (socket) => {
    const done =
      direction === 'up'
        ? pipeline(socket, createWriteStream(join(dir, 'raw-up.bin')))
        : pipeline(createReadStream(join(dir, 'raw-up.bin')), socket);
    done.catch(() => socket.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  const open = async (): Promise<TLSSocket> => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ca: readFileSync(pki.ca) });
    await once(socket, 'secureConnect');
    return socket;
  };
  try {
    const started = performance.now();
    const up = await open();
    const closed = once(up, 'close');
    await pipeline(createReadStream(source), up);
    await closed;
    // The server's write stream has flushed once the upload's socket closed and the file is whole.
    direction = 'down';
    const down = await open();
    await pipeline(down, createWriteStream(join(dir, 'raw-down.bin')));
    return performance.now() - started;
  } finally {
    server.close();
  }
}

/** Measures B11; starts its own daemon with a TLS listener. */
export async function benchFiles(shared: BenchDaemon): Promise<Figure[]> {
  const pki = makeCertificates(shared.dir);
  const { daemon, url } = await startTlsBenchDaemon({}, pki);
  try {
    const source = join(daemon.dir, 'b11-source.bin');
    execFileSync('bash', ['-c', `head -c ${SIZE} /dev/urandom > "$1"`, 'b11', source]);
    const expected = await sha256(source);
    const rawMs = await rawTlsRoundTrip(pki, source, daemon.dir);
    const token = readFileSync(join(daemon.stateDir, 'token'), 'utf8').trim();
    const client = await connect({ url, ca: readFileSync(pki.ca), token, clientName: 'execd-bench' });
    const sessionId = 'bench-b11';
    await client.call(SessionOpen, { sessionId, cwd: daemon.dir });
    const before = readMemory(daemon.pid).rss;
    resetPeakMemory(daemon.pid);
    const started = performance.now();
    await client.fs.upload(source, 'b11-uploaded.bin', { sessionId });
    const back = join(daemon.dir, 'b11-back.bin');
    await client.fs.download(back, 'b11-uploaded.bin', { sessionId });
    const apiMs = performance.now() - started;
    const peak = readMemory(daemon.pid).peak;
    client.close();
    const identical =
      (await sha256(back)) === expected && (await sha256(join(daemon.dir, 'raw-down.bin'))) === expected;
    const rate = (ms: number) => `${((2 * SIZE) / MiB / (ms / 1000)).toFixed(0)} MiB/s`;
    return [
      {
        label: 'B11 file API throughput ratio vs raw TLS',
        value: rawMs / apiMs,
        target: 0.8,
        comparison: 'at-least',
        digits: 2,
        note: `256 MiB up then down: file API ${rate(apiMs)}, raw TLS ${rate(rawMs)}`,
      },
      {
        label: 'B11 daemon RSS growth',
        value: (peak - before) / 1e6,
        target: 64,
        comparison: 'at-most',
        digits: 1,
        unit: ' MB',
        note: `RSS ${(before / 1e6).toFixed(1)} MB before, peak ${(peak / 1e6).toFixed(1)} MB`,
      },
      { label: 'B11 bytes identical', value: identical ? 1 : 0, target: 1, comparison: 'at-least', digits: 0 },
    ];
  } finally {
    await daemon.stop();
  }
}
