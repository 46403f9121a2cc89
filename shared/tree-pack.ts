/**
 * Packs a directory as a tar archive (docs/files.md), walking by descriptor: every level is opened
 * through its parent's descriptor with `O_NOFOLLOW`, so a symlink is stored as a symlink and never
 * leads the walk out of the tree (unless `follow` asks for link targets, as `cp -L` does). Modes
 * and modification times are kept, hard links inside the tree stay hard links, and sockets, FIFOs
 * and devices are left out. The daemon packs downloads through it (skipping its hidden places);
 * the client packs uploads.
 */
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  statSync,
  type Dirent,
  type Stats,
} from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { Header, Pack } from 'tar-stream';
import { DIR_NOFOLLOW, entryAtFd } from './fd-path.js';

/** A file at most this large is read whole and handed to the archive in one piece. */
const WHOLE_FILE_BYTES = 256 * 1024;
/** Bytes read at a time from a larger file. */
const READ_BYTES = 256 * 1024;

/** How a tree is walked. */
export interface PackOptions {
  /** Archive what symlinks point to instead of the links (a dangling link stays a link). */
  follow?: boolean;
  /** True for an entry (by its real path, last component not followed) the archive leaves out. */
  skip?: (real: string) => boolean;
}

interface Walk {
  pack: Pack;
  options: PackOptions;
  /** The first name each multiply-linked file was archived under, by device and inode. */
  linked: Map<string, string>;
  /** Directories being walked (device and inode), so a followed link cannot loop. */
  ancestors: Set<string>;
  entries: number;
}

/** Adds one entry and waits until the archive took it (the archive's reader is the flow control). */
function addEntry(pack: Pack, header: Header | (Partial<Header> & { name: string }), body?: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (error?: Error | null) => (error ? reject(error) : resolve());
    if (body) pack.entry(header, body, done);
    else pack.entry(header, done);
  });
}

/**
 * Archives the opened directory `root` (as `./` and everything below it); resolves with the entry
 * count. Its system calls are synchronous for the reason `tree-unpack.ts` gives: a small file is
 * a handful of short calls, and a thread-pool round trip for each made the walk several times
 * slower than `tar -c`; the event loop turns between entries, as the archive's reader takes them.
 */
export async function packTree(
  root: { handle: FileHandle; real: string },
  pack: Pack,
  options: PackOptions = {},
): Promise<number> {
  const rootStats = fstatSync(root.handle.fd);
  const walk: Walk = { pack, options, linked: new Map(), ancestors: new Set([inodeOf(rootStats)]), entries: 1 };
  await addEntry(pack, { name: './', type: 'directory', mode: rootStats.mode & 0o7777, mtime: rootStats.mtime });
  await walkDirectory(walk, root.handle.fd, root.real, '');
  return walk.entries;
}

const inodeOf = (stats: Stats) => `${stats.dev}:${stats.ino}`;

/** Entries of a directory in name order (what `sort()` gives names). */
const byName = (a: Dirent, b: Dirent) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

async function walkDirectory(walk: Walk, dir: number, real: string, prefix: string): Promise<void> {
  const entries = readdirSync(entryAtFd(dir, real, '.'), { withFileTypes: true }).sort(byName);
  for (const entry of entries) {
    const name = entry.name;
    const at = entryAtFd(dir, real, name);
    const entryReal = join(real, name);
    if (walk.options.skip?.(entryReal)) continue;
    const rel = prefix + name;
    if (!walk.options.follow) {
      // The listing's type saves an lstat: what is then opened (never through a symlink) is checked again.
      if (entry.isFile()) await addFile(walk, at, rel);
      else if (entry.isDirectory()) await addDirectory(walk, at, entryReal, rel);
      else if (entry.isSymbolicLink()) await addSymlink(walk, at, rel);
      // Sockets, FIFOs and devices are not archived.
      continue;
    }
    const stats = lstatSync(at, { throwIfNoEntry: false });
    if (!stats) continue; // gone since the directory was read
    const target = stats.isSymbolicLink() ? (statSync(at, { throwIfNoEntry: false }) ?? stats) : stats;
    if (target.isDirectory()) await addDirectory(walk, at, entryReal, rel);
    else if (target.isFile()) await addFile(walk, at, rel);
    else if (target.isSymbolicLink()) await addSymlink(walk, at, rel);
  }
}

/** A symlink entry: its target is stored, never followed. */
async function addSymlink(walk: Walk, at: string, rel: string): Promise<void> {
  const stats = lstatSync(at, { throwIfNoEntry: false });
  if (!stats?.isSymbolicLink()) return; // replaced or removed since it was listed
  walk.entries++;
  const linkname = readlinkSync(at);
  await addEntry(walk.pack, { name: rel, type: 'symlink', linkname, mode: 0o777, mtime: stats.mtime });
}

/** Opens `at` with `flags`, or undefined when it is gone or is not what the flags accept. */
function openOrSkip(at: string, flags: number): number | undefined {
  try {
    return openSync(at, flags);
  } catch {
    return undefined;
  }
}

async function addDirectory(walk: Walk, at: string, real: string, rel: string): Promise<void> {
  const child = openOrSkip(at, walk.options.follow ? constants.O_RDONLY | constants.O_DIRECTORY : DIR_NOFOLLOW);
  if (child === undefined) return; // replaced by a symlink or removed since it was listed
  try {
    const stats = fstatSync(child);
    const inode = inodeOf(stats);
    if (walk.ancestors.has(inode)) return; // a followed link back up the tree
    walk.entries++;
    await addEntry(walk.pack, { name: `${rel}/`, type: 'directory', mode: stats.mode & 0o7777, mtime: stats.mtime });
    walk.ancestors.add(inode);
    await walkDirectory(walk, child, real, `${rel}/`);
    walk.ancestors.delete(inode);
  } finally {
    closeSync(child);
  }
}

async function addFile(walk: Walk, at: string, rel: string): Promise<void> {
  const flags = constants.O_RDONLY | constants.O_NONBLOCK | (walk.options.follow ? 0 : constants.O_NOFOLLOW);
  const file = openOrSkip(at, flags);
  if (file === undefined) return;
  try {
    const stats = fstatSync(file);
    if (!stats.isFile()) return; // replaced by something else since it was listed
    const header = { name: rel, mode: stats.mode & 0o7777, mtime: stats.mtime, size: stats.size };
    walk.entries++;
    if (stats.nlink > 1 && !walk.options.follow) {
      const first = walk.linked.get(inodeOf(stats));
      if (first !== undefined) return await addEntry(walk.pack, { ...header, type: 'link', linkname: first, size: 0 });
      walk.linked.set(inodeOf(stats), rel);
    }
    if (stats.size <= WHOLE_FILE_BYTES) {
      const body = Buffer.allocUnsafe(stats.size);
      readFully(file, body, 0, rel);
      return await addEntry(walk.pack, { ...header, type: 'file' }, body);
    }
    await streamFile(walk.pack, file, { ...header, type: 'file' });
  } finally {
    closeSync(file);
  }
}

/** Fills `buffer` from `position`; a file that shrank meanwhile fails the archive. */
function readFully(file: number, buffer: Buffer, position: number, rel: string): void {
  let filled = 0;
  while (filled < buffer.length) {
    const bytesRead = readSync(file, buffer, filled, buffer.length - filled, position + filled);
    if (bytesRead === 0) throw new Error(`${rel} shrank while it was archived`);
    filled += bytesRead;
  }
}

/** A large file's bytes, a buffer at a time, each written when the archive can take it. */
async function streamFile(
  pack: Pack,
  file: number,
  header: Partial<Header> & { name: string; size: number },
): Promise<void> {
  let finished!: Promise<void>;
  const sink = await new Promise<ReturnType<Pack['entry']>>((resolve) => {
    finished = new Promise<void>((done, fail) => {
      resolve(pack.entry(header, (error) => (error ? fail(error) : done())));
    });
  });
  finished.catch(() => {});
  let position = 0;
  while (position < header.size) {
    const buffer = Buffer.allocUnsafe(Math.min(READ_BYTES, header.size - position));
    readFully(file, buffer, position, header.name);
    position += buffer.length;
    if (!sink.write(buffer)) {
      await new Promise<void>((resolve) => {
        const settle = () => {
          sink.off('drain', settle);
          sink.off('close', settle);
          resolve();
        };
        sink.on('drain', settle);
        sink.on('close', settle);
      });
      if (sink.destroyed) break; // `finished` says why
    }
  }
  sink.end(null);
  await finished;
}

/** Bytes of the archive gathered before one socket write. */
const SEND_BATCH_BYTES = 256 * 1024;

/**
 * Moves an archive to a socket as its entries are packed; `onBatch` sees each batch before it is
 * written (to hash and count it). The archive comes in small pieces (a 512-byte header, then a
 * file's bytes): written one by one, each would be its own TLS record and system call, and hashed
 * one by one each would pay the hash's call overhead, so pieces are gathered to
 * `SEND_BATCH_BYTES` first.
 */
export async function pumpArchive(
  pack: AsyncIterable<unknown>,
  write: (bytes: Buffer) => Promise<void>,
  onBatch: (bytes: Buffer) => void,
): Promise<void> {
  let batch: Buffer[] = [];
  let gathered = 0;
  const flush = async () => {
    const bytes = Buffer.concat(batch, gathered);
    batch = [];
    gathered = 0;
    onBatch(bytes);
    await write(bytes);
  };
  for await (const chunk of pack) {
    const piece = chunk as Buffer;
    batch.push(piece);
    gathered += piece.length;
    if (gathered >= SEND_BATCH_BYTES) await flush();
  }
  if (gathered > 0) await flush();
}
