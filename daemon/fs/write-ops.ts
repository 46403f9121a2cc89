/**
 * The writing file methods (docs/files.md): `fs/write`, `fs/mkdir`, `fs/remove`, `fs/move`, and the
 * steps uploads share with them. Every write opens the target's parent directory, checks the real
 * path of what it opened against the policy, and then acts through that descriptor (`anchor.ts`).
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, mkdir, open, rename, rmdir, unlink, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ExecdError } from '../../protocol/errors.js';
import { IF_ABSENT, type FsWriteResult } from '../../protocol/fs.js';
import { anchorParent, entryAt, type Anchor } from './anchor.js';
import { targetOf, type FsCall } from './call.js';
import { denied, errnoOf, fsErrorOf } from './errno.js';
import { withPathLock } from './locks.js';
import { refusal, subtreeRefusal } from './policy.js';
import { versionOf } from './stats.js';
import { ensureDirectories, removeTree } from './tree.js';

/** Mode of a file `fs/write` creates when the call names none. */
export const DEFAULT_FILE_MODE = 0o644;

/** Names of the daemon's temp files: `.execd-<kind>-<random>.tmp` beside their target. */
export const TEMP_FILE_PATTERN = /^\.execd-(write|upload)-[0-9a-f]{16}\.tmp$/;

/**
 * Opens the parent of `target` for a write and checks the entry's real path. With `createParents`
 * the missing directories are made first, each checked before it is made.
 */
export async function anchorForWrite(
  call: FsCall,
  target: string,
  createParents = false,
): Promise<Anchor | ExecdError> {
  if (call.policy.mode === 'read-only') return denied(call.method, target, refusal(call.policy, target, 'write')!);
  try {
    if (createParents) await ensureDirectories(dirname(target), (real) => refusal(call.policy, real, 'write'));
    const anchor = await anchorParent(target);
    const why = anchor.name === '' ? 'the root directory is not writable' : refusal(call.policy, anchor.real, 'write');
    if (!why) return anchor;
    await anchor.dir.close();
    return denied(call.method, target, why);
  } catch (error) {
    const reason = (error as { reason?: string }).reason;
    return reason ? denied(call.method, target, reason) : fsErrorOf(call.method, target, error);
  }
}

/** `FS_CONFLICT` unless the entry's current version is `ifMatch` (or it is absent for `'absent'`). */
export async function checkIfMatch(
  call: FsCall,
  target: string,
  at: string,
  ifMatch: string | undefined,
): Promise<ExecdError | undefined> {
  if (ifMatch === undefined) return undefined;
  const stats = await lstat(at, { bigint: true }).catch((error: unknown) => {
    if (errnoOf(error) === 'ENOENT') return undefined;
    throw error;
  });
  const current = stats ? versionOf(stats) : IF_ABSENT;
  if (current === ifMatch) return undefined;
  return new ExecdError(
    'FS_CONFLICT',
    `${call.method} ${target}: ifMatch ${ifMatch} does not match the current version ${current}`,
    { version: current },
  );
}

/** A fresh temp file beside the target, created exclusively, never through a symlink. */
export async function createTemp(
  anchor: Anchor,
  kind: 'write' | 'upload',
): Promise<{ handle: FileHandle; name: string; at: string }> {
  const name = `.execd-${kind}-${randomBytes(8).toString('hex')}.tmp`;
  const at = entryAt(anchor.dir, anchor.dirReal, name);
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  return { handle: await open(at, flags, 0o600), name, at };
}

/**
 * Puts a finished temp file in the target's place: the mode (the call's, else the replaced
 * file's, else the default), fsync, rename over the entry (a symlink there is replaced, not
 * followed), fsync of the directory. Runs under the target's lock; `ifMatch` is checked there.
 */
export async function replaceTarget(
  call: FsCall,
  target: string,
  anchor: Anchor,
  temp: { handle: FileHandle; at: string },
  options: { mode?: number; ifMatch?: string },
): Promise<FsWriteResult | ExecdError> {
  return withPathLock(anchor.real, async () => {
    const conflict = await checkIfMatch(call, target, anchor.at, options.ifMatch);
    if (conflict) return conflict;
    const existing = await lstat(anchor.at).catch(() => undefined);
    if (existing?.isDirectory()) return new ExecdError('FS_IS_A_DIRECTORY', `${call.method} ${target}: is a directory`);
    const mode = options.mode ?? (existing?.isFile() ? existing.mode & 0o7777 : DEFAULT_FILE_MODE);
    await temp.handle.chmod(mode);
    await temp.handle.sync();
    await rename(temp.at, anchor.at);
    await anchor.dir.sync().catch(() => {});
    const stats = await lstat(anchor.at, { bigint: true });
    return { version: versionOf(stats), size: Number(stats.size) };
  });
}

/** `fs/write`. */
export async function writePath(
  call: FsCall,
  params: { path: string; data: string; mode?: number; createParents?: boolean; ifMatch?: string; append?: boolean },
): Promise<FsWriteResult | ExecdError> {
  const target = targetOf(call, params.path);
  const anchor = await anchorForWrite(call, target, params.createParents);
  if (anchor instanceof ExecdError) return anchor;
  const bytes = Buffer.from(params.data, 'base64');
  try {
    if (params.append) return await appendTo(call, target, anchor, bytes, params);
    const temp = await createTemp(anchor, 'write');
    try {
      await temp.handle.writeFile(bytes);
      const outcome = await replaceTarget(call, target, anchor, temp, params);
      if (outcome instanceof ExecdError) await unlink(temp.at).catch(() => {});
      return outcome;
    } catch (error) {
      await unlink(temp.at).catch(() => {});
      throw error;
    } finally {
      await temp.handle.close();
    }
  } catch (error) {
    return fsErrorOf(call.method, target, error);
  } finally {
    await anchor.dir.close();
  }
}

/** `append`: `O_APPEND` to the entry itself (`O_NOFOLLOW`), created with `mode` when missing. */
async function appendTo(
  call: FsCall,
  target: string,
  anchor: Anchor,
  bytes: Buffer,
  params: { mode?: number; ifMatch?: string },
): Promise<FsWriteResult | ExecdError> {
  return withPathLock(anchor.real, async () => {
    const conflict = await checkIfMatch(call, target, anchor.at, params.ifMatch);
    if (conflict) return conflict;
    const flags = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW;
    const handle = await open(anchor.at, flags, params.mode ?? DEFAULT_FILE_MODE);
    try {
      const stats = await handle.stat({ bigint: true });
      if (!stats.isFile()) return denied(call.method, target, 'not a regular file');
      // An append writes the inode in place: through a hard link it would land wherever the file's
      // other names are, outside the workspace too. A replace makes a new inode and is not affected.
      if (stats.nlink > 1n && call.policy.mode !== 'danger-full-access')
        return denied(call.method, target, 'it has more than one link, so an append could write outside the workspace');
      await handle.writeFile(bytes);
      const after = await handle.stat({ bigint: true });
      return { version: versionOf(after), size: Number(after.size) };
    } finally {
      await handle.close();
    }
  });
}

/** `fs/mkdir`. */
export async function mkdirPath(
  call: FsCall,
  params: { path: string; parents?: boolean },
): Promise<Record<string, never> | ExecdError> {
  const target = targetOf(call, params.path);
  const anchor = await anchorForWrite(call, target, params.parents);
  if (anchor instanceof ExecdError) return anchor;
  try {
    await mkdir(anchor.at);
    return {};
  } catch (error) {
    if (params.parents && errnoOf(error) === 'EEXIST' && (await lstat(anchor.at)).isDirectory()) return {};
    return fsErrorOf(call.method, target, error);
  } finally {
    await anchor.dir.close();
  }
}

/** `fs/remove`: the entry itself (a symlink, not its target); a directory tree only with `recursive`. */
export async function removePath(
  call: FsCall,
  params: { path: string; recursive?: boolean },
): Promise<{ removed: boolean } | ExecdError> {
  const target = targetOf(call, params.path);
  const anchor = await anchorForWrite(call, target);
  if (anchor instanceof ExecdError) return anchor;
  try {
    const held = subtreeRefusal(call.policy, anchor.real);
    if (held) return denied(call.method, target, held);
    const stats = await lstat(anchor.at).catch((error: unknown) => {
      if (errnoOf(error) === 'ENOENT') return undefined;
      throw error;
    });
    if (!stats) return { removed: false };
    if (!stats.isDirectory()) await unlink(anchor.at);
    else if (params.recursive) await removeTree(anchor.dir, anchor.dirReal, anchor.name);
    else await rmdir(anchor.at);
    return { removed: true };
  } catch (error) {
    return fsErrorOf(call.method, target, error);
  } finally {
    await anchor.dir.close();
  }
}

/** `fs/move`: a rename between two checked parents; without `overwrite` an existing target is `FS_EXISTS`. */
export async function movePath(
  call: FsCall,
  params: { from: string; to: string; overwrite?: boolean },
): Promise<Record<string, never> | ExecdError> {
  const from = targetOf(call, params.from);
  const to = targetOf(call, params.to);
  const source = await anchorForWrite(call, from);
  if (source instanceof ExecdError) return source;
  try {
    const held = subtreeRefusal(call.policy, source.real);
    if (held) return denied(call.method, from, held);
    const dest = await anchorForWrite(call, to);
    if (dest instanceof ExecdError) return dest;
    try {
      return await withPathLock(dest.real, async () => {
        if (!params.overwrite && (await lstat(dest.at).catch(() => undefined)))
          return new ExecdError('FS_EXISTS', `${call.method} ${to}: already exists (pass overwrite to replace it)`);
        await rename(source.at, dest.at);
        return {};
      });
    } catch (error) {
      return fsErrorOf(call.method, `${from} -> ${to}`, error);
    } finally {
      await dest.dir.close();
    }
  } finally {
    await source.dir.close();
  }
}
