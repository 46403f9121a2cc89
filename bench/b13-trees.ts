/**
 * B13 (SPEC §19): directory trees uploaded then downloaded through the file API as tar over TLS on
 * loopback, against `tar -c | a raw TLS socket | tar -x` carrying the same tree (up, then back
 * down) in the same run. Two trees: 10,000 files of 1-8 KiB in 200 directories (with symlinks,
 * hard links and a few modes), and this repository's own `node_modules`. Figures per tree: the
 * throughput ratio (target ≥ 0.8) and whether bytes, links and modes came back identical; for
 * both, the daemon's peak RSS growth (target ≤ 64 MB). Each side runs `ROUNDS` times, taking
 * turns, and the medians are compared.
 *
 * No tree is removed until every round is done (about 3.5 GB on disk at the end, most of it the
 * twelve copies of `node_modules`). On an ext4 without a journal (as on the bench machine) an
 * inode freed within the last minute or so is skipped by the allocator, one inode-table lookup
 * each, so right after a round's 20,000 files were removed the next round's creates took 0.3-0.7
 * ms each instead of ~0.03 ms: the figure then told how recently the disk was cleaned, not what a
 * transfer costs.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { join, relative } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { connect as tlsConnect, createServer, type TLSSocket } from 'node:tls';
import { connect } from '../client/connect.js';
import { SessionOpen } from '../protocol/methods.js';
import { makeCertificates } from './b1-tls.js';
import { startTlsBenchDaemon, type BenchDaemon } from './daemon.js';
import { interleave } from './interleave.js';
import { readMemory, resetPeakMemory } from './proc-stats.js';
import { median, type Figure } from './stats.js';

const FILES = 10_000;
const DIRECTORIES = 200;
/** Timed round trips of each side, taking turns (the machine's load drifts). */
const ROUNDS = 3;

/** A deterministic tree: `FILES` files of 1-8 KiB over `DIRECTORIES` directories, some links and modes. */
function makeSmallFilesTree(root: string): void {
  let seed = 13;
  const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31);
  for (let d = 0; d < DIRECTORIES; d++) mkdirSync(join(root, `d${d}`), { recursive: true });
  for (let f = 0; f < FILES; f++) {
    const size = 1024 + (next() % (7 * 1024 + 1));
    const body = Buffer.alloc(size);
    for (let i = 0; i < size; i += 4) body.writeUInt32LE(next(), Math.min(i, size - 4));
    const path = join(root, `d${f % DIRECTORIES}`, `f${f}.dat`);
    writeFileSync(path, body);
    if (f % 10 === 0) chmodSync(path, 0o755);
    if (f % 97 === 0) chmodSync(path, 0o600);
  }
  for (let d = 0; d < DIRECTORIES; d += 10) {
    symlinkSync(`../d${d + 1}/f${d + 1}.dat`, join(root, `d${d}`, 'link-to-next'));
    linkSync(join(root, `d${d}`, `f${d}.dat`), join(root, `d${d}`, 'hard-link'));
  }
}

/**
 * Every entry below `root`: type, mode, link target or content hash, and for a hard link the first
 * path of the tree it shares its inode with (links to files outside the tree do not count).
 */
function describeTree(root: string): string {
  const hash = createHash('sha256');
  const firstOf = new Map<string, string>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const stats = lstatSync(path);
      const rel = relative(root, path);
      const mode = (stats.mode & 0o7777).toString(8);
      if (stats.isSymbolicLink()) hash.update(`${rel} l ${readlinkSync(path)}\n`);
      else if (stats.isDirectory()) {
        hash.update(`${rel} d ${mode}\n`);
        walk(path);
      } else if (stats.isFile()) {
        const inode = `${stats.dev}:${stats.ino}`;
        const first = firstOf.get(inode) ?? rel;
        firstOf.set(inode, first);
        const content = createHash('sha256').update(readFileSync(path)).digest('hex');
        hash.update(`${rel} f ${mode} ${first} ${content}\n`);
      }
    }
  };
  walk(root);
  return hash.digest('hex');
}

/** Bytes and entries of a tree (regular files' sizes). */
function sizeOf(root: string): { bytes: number; entries: number } {
  let bytes = 0;
  let entries = 0;
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      entries++;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) bytes += lstatSync(path).size;
    }
  };
  walk(root);
  return { bytes, entries };
}

/** Runs `tar` with `args`, its stdin or stdout joined to `socket`; resolves when both ended. */
async function tarThrough(args: string[], socket: TLSSocket, direction: 'in' | 'out'): Promise<void> {
  const tar = spawn('tar', args, {
    stdio: [direction === 'in' ? 'pipe' : 'ignore', direction === 'out' ? 'pipe' : 'ignore', 'inherit'],
  });
  const exit = once(tar, 'exit');
  if (direction === 'in') await pipeline(socket as Readable, tar.stdin as Writable);
  else await pipeline(tar.stdout as Readable, socket as Writable);
  const [code] = (await exit) as [number | null];
  if (code !== 0) throw new Error(`tar ${args.join(' ')} exited ${code}`);
}

/** Milliseconds of `tar -c | TLS | tar -x` up into `up`, then back down from `up` into `down`. */
async function rawTarRoundTrip(
  pki: { ca: string; cert: string; key: string },
  source: string,
  up: string,
  down: string,
): Promise<number> {
  mkdirSync(up);
  mkdirSync(down);
  let direction: 'up' | 'down' = 'up';
  let served: Promise<void> = Promise.resolve();
  const server = createServer({ cert: readFileSync(pki.cert), key: readFileSync(pki.key) }, (socket) => {
    served =
      direction === 'up'
        ? tarThrough(['-x', '-C', up, '-f', '-'], socket, 'in')
        : tarThrough(['-c', '-C', up, '-f', '-', '.'], socket, 'out');
    served.catch(() => socket.destroy());
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
    await tarThrough(['-c', '-C', source, '-f', '-', '.'], await open(), 'out');
    await served;
    direction = 'down';
    await tarThrough(['-x', '-C', down, '-f', '-'], await open(), 'in');
    await served;
    return performance.now() - started;
  } finally {
    server.close();
  }
}

/** Measures B13; starts its own daemon with a TLS listener. */
export async function benchTrees(shared: BenchDaemon): Promise<Figure[]> {
  const pki = makeCertificates(shared.dir);
  const { daemon, url } = await startTlsBenchDaemon({}, pki);
  try {
    const small = join(daemon.dir, 'b13-small');
    makeSmallFilesTree(small);
    const trees: Array<[string, string]> = [
      ['10k small files', small],
      ['node_modules', join(import.meta.dirname, '..', '..', 'node_modules')],
    ];
    const token = readFileSync(join(daemon.stateDir, 'token'), 'utf8').trim();
    const client = await connect({ url, ca: readFileSync(pki.ca), token, clientName: 'execd-bench' });
    const sessionId = 'bench-b13';
    await client.call(SessionOpen, { sessionId, cwd: daemon.dir });
    const figures: Figure[] = [];
    const before = readMemory(daemon.pid).rss;
    resetPeakMemory(daemon.pid);
    try {
      for (const [index, [name, source]] of trees.entries()) {
        const expected = describeTree(source);
        const { bytes, entries } = sizeOf(source);
        const verdict = { identical: true };
        const at = (what: string, round: number) => join(daemon.dir, `${what}-${index}-${round}`);
        const check = (round: number, dirs: string[]) => {
          if (round === 0) verdict.identical &&= dirs.every((dir) => describeTree(dir) === expected);
        };
        const times = await interleave(
          [
            {
              name: 'raw',
              once: async (round) => {
                const ms = await rawTarRoundTrip(pki, source, at('raw-up', round), at('raw-down', round));
                check(round, [at('raw-down', round), at('raw-up', round)]);
                return ms;
              },
            },
            {
              name: 'api',
              once: async (round) => {
                const started = performance.now();
                await client.fs.uploadTree(source, at('api-up', round), { sessionId });
                await client.fs.downloadTree(at('api-up', round), at('api-down', round), { sessionId });
                const ms = performance.now() - started;
                check(round, [at('api-up', round), at('api-down', round)]);
                return ms;
              },
            },
          ],
          ROUNDS,
        );
        const apiMs = median(times.get('api')!);
        const rawMs = median(times.get('raw')!);
        const rate = (ms: number) =>
          `${((2 * bytes) / 2 ** 20 / (ms / 1000)).toFixed(0)} MiB/s, ${(ms / 1000).toFixed(2)} s`;
        figures.push(
          {
            label: `B13 tree (${name}) throughput ratio vs tar over raw TLS`,
            value: rawMs / apiMs,
            target: 0.8,
            comparison: 'at-least',
            digits: 2,
            note: `${entries} entries, ${(bytes / 2 ** 20).toFixed(1)} MiB, up then down, median of ${ROUNDS} interleaved: file API ${rate(apiMs)}, tar | TLS | tar ${rate(rawMs)}`,
          },
          {
            label: `B13 tree (${name}) bytes, links and modes identical`,
            value: verdict.identical ? 1 : 0,
            target: 1,
            comparison: 'at-least',
            digits: 0,
          },
        );
      }
    } finally {
      client.close();
    }
    const peak = readMemory(daemon.pid).peak;
    figures.push({
      label: 'B13 daemon RSS growth',
      value: (peak - before) / 1e6,
      target: 64,
      comparison: 'at-most',
      digits: 1,
      unit: ' MB',
      note: `RSS ${(before / 1e6).toFixed(1)} MB before, peak ${(peak / 1e6).toFixed(1)} MB over both trees`,
    });
    return figures;
  } finally {
    await daemon.stop();
  }
}
