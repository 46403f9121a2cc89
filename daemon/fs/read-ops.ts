/** `fs/stat`, `fs/read` and the read-side open shared with downloads (docs/files.md). */
import { constants } from 'node:fs';
import { lstat, open, type FileHandle } from 'node:fs/promises';
import { ExecdError } from '../../protocol/errors.js';
import { DEFAULT_FS_READ_BYTES, type FsReadResult, type FsStatResult } from '../../protocol/fs.js';
import { anchorParent, realPathOf } from './anchor.js';
import { targetOf, type FsCall } from './call.js';
import { denied, fsErrorOf } from './errno.js';
import { permissionRefusal, refusal, type FsAccess } from './policy.js';
import { entryTypeOf, versionOf } from './stats.js';

/** `fs/stat`: `lstat` through the checked parent directory. */
export async function statPath(call: FsCall, path: string): Promise<FsStatResult | ExecdError> {
  const target = targetOf(call, path);
  let anchor;
  try {
    anchor = await anchorParent(target);
  } catch (error) {
    return fsErrorOf(call.method, target, error);
  }
  try {
    const why = refusal(call.policy, anchor.real, 'read');
    if (why) return denied(call.method, target, why);
    const stats = await lstat(anchor.at, { bigint: true });
    return {
      path: target,
      type: entryTypeOf(stats),
      size: Number(stats.size),
      mode: Number(stats.mode & 0o7777n),
      mtimeMs: Number(stats.mtimeMs),
      version: versionOf(stats),
    };
  } catch (error) {
    return fsErrorOf(call.method, target, error);
  } finally {
    await anchor.dir.close();
  }
}

/** A regular file opened for reading, checked by the real path of the descriptor. */
export interface OpenedFile {
  handle: FileHandle;
  size: number;
  /** Permission bits, 0-0o7777. */
  mode: number;
  version: string;
}

/**
 * Opens `path` for reading. Symlinks are followed (reads reach anything the daemon's user can
 * read), but the check runs on the real path of what was opened, so no link leads into a hidden
 * tree. `O_NONBLOCK` keeps a FIFO from hanging the call; anything but a regular file is refused.
 */
export async function openForRead(call: FsCall, path: string): Promise<OpenedFile | ExecdError> {
  const target = targetOf(call, path);
  let handle: FileHandle;
  try {
    handle = await open(target, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    return fsErrorOf(call.method, target, error);
  }
  const refused = await checkOpened(call, target, handle).catch((error: unknown) =>
    fsErrorOf(call.method, target, error),
  );
  if (!(refused instanceof ExecdError)) return refused;
  await handle.close();
  return refused;
}

/** The opened file when it is a regular file the policy lets this call read; else why not. */
async function checkOpened(call: FsCall, target: string, handle: FileHandle): Promise<OpenedFile | ExecdError> {
  const why = refusal(call.policy, await realPathOf(handle, target), 'read');
  if (why) return denied(call.method, target, why);
  const stats = await handle.stat({ bigint: true });
  if (stats.isDirectory()) return new ExecdError('FS_IS_A_DIRECTORY', `${call.method} ${target}: is a directory`);
  if (!stats.isFile()) return denied(call.method, target, 'not a regular file');
  const beyond = await beyondPolicy(call, stats, 'read');
  if (beyond) return denied(call.method, target, beyond);
  return { handle, size: Number(stats.size), mode: Number(stats.mode & 0o7777n), version: versionOf(stats) };
}

/**
 * Why an opened file is out of this call's reach although its path is not: a hard link to a hidden
 * file (the same device and inode, whatever the name), or, for a root daemon's confined session,
 * a file whose mode bits a capability-less command could not pass.
 */
export async function beyondPolicy(
  call: FsCall,
  stats: { dev: bigint; ino: bigint; nlink: bigint; uid: bigint; gid: bigint; mode: bigint },
  access: FsAccess,
): Promise<string | undefined> {
  // A directory always has several links; only a regular file's extra names can be hard links.
  if (stats.nlink > 1n && (stats.mode & 0o170000n) === 0o100000n) {
    const hidden = await call.hiddenFileIds();
    if (hidden.some((file) => BigInt(file.dev) === stats.dev && BigInt(file.ino) === stats.ino))
      return 'it is a hard link to a file of the daemon, which no file method may reach';
  }
  const identity = call.policy.withoutCapabilities;
  if (!identity) return undefined;
  return permissionRefusal(
    identity,
    { uid: Number(stats.uid), gid: Number(stats.gid), mode: Number(stats.mode) },
    access,
  );
}

/** Reads up to `length` bytes at `offset` of an opened file. */
export async function readChunk(
  handle: FileHandle,
  offset: number,
  length: number,
): Promise<{ data: string; bytes: number }> {
  const buffer = Buffer.allocUnsafe(length);
  let filled = 0;
  while (filled < length) {
    const { bytesRead } = await handle.read(buffer, filled, length - filled, offset + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return { data: buffer.toString('base64', 0, filled), bytes: filled };
}

/** `fs/read`: one range of a file, with its size and version as opened. */
export async function readPath(
  call: FsCall,
  params: { path: string; offset?: number; length?: number },
): Promise<FsReadResult | ExecdError> {
  const opened = await openForRead(call, params.path);
  if (opened instanceof ExecdError) return opened;
  try {
    const offset = params.offset ?? 0;
    const length = Math.max(0, Math.min(params.length ?? DEFAULT_FS_READ_BYTES, opened.size - offset));
    const { data, bytes } = await readChunk(opened.handle, offset, length);
    return { data, bytes, eof: offset + bytes >= opened.size, size: opened.size, version: opened.version };
  } catch (error) {
    return fsErrorOf(call.method, targetOf(call, params.path), error);
  } finally {
    await opened.handle.close();
  }
}
