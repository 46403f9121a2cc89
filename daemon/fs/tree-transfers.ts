/**
 * Directory trees through the transfer streams (docs/files.md). An upload unpacks a tar archive into a
 * staging directory made beside its target (`.execd-tree-<random>.tmp`, mode 0700), each entry
 * checked against the session's policy and the hidden places at the path it will have after
 * commit, and never written through a symlink (`shared/tree-unpack.ts`). Commit renames the
 * staging directory into place, so a refused, cut or abandoned archive leaves nothing at the
 * target, and release removes the staging directory. A download archives a directory as it walks
 * it, by descriptor, never following a symlink and leaving the hidden places out.
 *
 * Files are not fsynced one by one (a 10,000-file tree would wait on 10,000 syncs); the rename at
 * commit is what makes the tree visible, and the directory holding it is synced then.
 */
import { createHash, randomBytes, type Hash } from 'node:crypto';
import { lstat, mkdir, open, rename, unlink, type FileHandle } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { pack as tarPack } from 'tar-stream';
import type { Config } from '../../protocol/config.js';
import { ExecdError } from '../../protocol/errors.js';
import { TAR_STREAM_ANSWER, type FsUploadCommitResult } from '../../protocol/fs.js';
import { drained } from '../../shared/byte-pump.js';
import { DIR_NOFOLLOW } from '../../shared/fd-path.js';
import { packTree, pumpArchive } from '../../shared/tree-pack.js';
import { TreeRefusal } from '../../shared/tree-rules.js';
import { TarUnpackStream, TreeUnpacker } from '../../shared/tree-unpack.js';
import { entryAt, openDirectory, type Anchor } from './anchor.js';
import { targetOf, type FsCall } from './call.js';
import { denied, errnoOf, fsErrorOf } from './errno.js';
import { withPathLock } from './locks.js';
import { isHidden, refusal, subtreeRefusal } from './policy.js';
import { versionOf } from './stats.js';
import { removeTree } from './tree.js';
import { anchorForWrite } from './write-ops.js';

/** Names of tree uploads' staging directories (and of a replaced tree on its way out). */
export const TREE_STAGING_PATTERN = /^\.execd-tree-[0-9a-f]{16}\.tmp$/;

/** A tree upload: the checked parent of its target and the staging directory beside it. */
export interface StagedTree {
  call: FsCall;
  target: string;
  anchor: Anchor;
  overwrite: boolean;
  staging: { name: string; at: string; real: string; handle: FileHandle };
  unpacker: TreeUnpacker;
  archive: TarUnpackStream;
  /** Bytes of the archive received, and their hash. */
  bytes: number;
  hash: Hash;
  /** True once the whole archive arrived and every entry landed. */
  complete: boolean;
}

const stagingName = () => `.execd-tree-${randomBytes(8).toString('hex')}.tmp`;

/** `FS_EXISTS` for an existing target without `overwrite`; `FS_DENIED` for one holding a hidden place. */
async function targetRefusal(tree: { call: FsCall; target: string; anchor: Anchor; overwrite: boolean }) {
  const existing = await lstat(tree.anchor.at).catch((error: unknown) => {
    if (errnoOf(error) === 'ENOENT') return undefined;
    throw error;
  });
  if (!existing) return { existing };
  if (!tree.overwrite)
    return {
      existing,
      error: new ExecdError(
        'FS_EXISTS',
        `${tree.call.method} ${tree.target}: already exists (pass overwrite to replace it)`,
      ),
    };
  const held = subtreeRefusal(tree.call.policy, tree.anchor.real);
  return { existing, error: held ? denied(tree.call.method, tree.target, held) : undefined };
}

/**
 * `fs/upload/begin` with `format: 'tar'`: checks the target as a write (a read-only session is
 * refused here, before a byte is sent) and makes the staging directory.
 */
export async function stageTree(
  call: FsCall,
  params: { path: string; createParents?: boolean; overwrite?: boolean },
  config: Config,
): Promise<StagedTree | ExecdError> {
  const target = targetOf(call, params.path);
  const anchor = await anchorForWrite(call, target, params.createParents);
  if (anchor instanceof ExecdError) return anchor;
  try {
    const overwrite = params.overwrite ?? false;
    const refused = await targetRefusal({ call, target, anchor, overwrite });
    if (refused.error) {
      await anchor.dir.close();
      return refused.error;
    }
    const name = stagingName();
    const at = entryAt(anchor.dir, anchor.dirReal, name);
    await mkdir(at, 0o700);
    const handle = await open(at, DIR_NOFOLLOW);
    const real = join(anchor.dirReal, name);
    const unpacker = new TreeUnpacker(
      { handle, real },
      { maxEntries: config.maxTreeEntries, maxFileBytes: config.maxTreeFileBytes, maxTotalBytes: config.maxTreeBytes },
      (rel) => refusal(call.policy, join(anchor.real, rel), 'write'),
    );
    return {
      call,
      target,
      anchor,
      overwrite,
      staging: { name, at, real, handle },
      unpacker,
      archive: new TarUnpackStream(unpacker),
      bytes: 0,
      hash: createHash('sha256'),
      complete: false,
    };
  } catch (error) {
    await anchor.dir.close();
    return fsErrorOf(call.method, target, error);
  }
}

/** A refusal or failure while unpacking, as the error value commit answers. */
export function treeErrorOf(tree: StagedTree, error: unknown): ExecdError {
  if (error instanceof ExecdError) return error;
  if (error instanceof TreeRefusal) return denied(tree.call.method, tree.target, error.reason);
  if (errnoOf(error) !== undefined) return fsErrorOf(tree.call.method, tree.target, error);
  return new ExecdError(
    'FS_DENIED',
    `${tree.call.method} ${tree.target}: the archive did not arrive whole: ${(error as Error).message}`,
  );
}

/**
 * Unpacks the archive a transfer stream carries until the client ends its side. Throws the first
 * refusal or failure (the caller records it and removes the staging directory).
 */
export async function receiveTree(tree: StagedTree, socket: Socket, rest: Buffer): Promise<void> {
  const take = async (chunk: Buffer) => {
    tree.bytes += chunk.length;
    tree.hash.update(chunk);
    await tree.archive.write(chunk);
  };
  try {
    if (rest.length > 0) await take(rest);
    // A peer that already ended its side sent everything in `rest`.
    if (!socket.readableEnded)
      for await (const chunk of socket.iterator({ destroyOnReturn: false })) await take(chunk as Buffer);
    await tree.archive.end();
    await tree.unpacker.finish();
    tree.complete = true;
  } catch (error) {
    tree.archive.destroy(error as Error);
    throw error;
  }
}

/** `fs/upload/commit` of a tree: the staging directory takes the target's place. */
export async function commitTree(
  tree: StagedTree,
  params: { size?: number; sha256?: string },
): Promise<FsUploadCommitResult | ExecdError> {
  const { call, target, anchor } = tree;
  if (!tree.complete)
    return new ExecdError('FS_DENIED', `${call.method} ${target}: no whole archive arrived on the transfer stream`);
  if (params.size !== undefined && params.size !== tree.bytes)
    return new ExecdError('INVALID_PARAMS', `size: ${tree.bytes} bytes arrived, not ${params.size}`);
  const sha256 = tree.hash.digest('hex');
  if (params.sha256 !== undefined && params.sha256 !== sha256)
    return new ExecdError('INVALID_PARAMS', `sha256: what arrived hashes to ${sha256}, not ${params.sha256}`);
  return withPathLock(anchor.real, async () => {
    const refused = await targetRefusal(tree);
    if (refused.error) return refused.error;
    if (refused.existing?.isDirectory()) {
      // The old tree steps aside under a staging name (swept after a crash), then goes.
      const aside = stagingName();
      const asideAt = entryAt(anchor.dir, anchor.dirReal, aside);
      await rename(anchor.at, asideAt);
      await rename(tree.staging.at, anchor.at);
      await removeTree(anchor.dir, anchor.dirReal, aside).catch(() => {});
    } else {
      if (refused.existing) await unlink(anchor.at);
      await rename(tree.staging.at, anchor.at);
    }
    tree.staging.at = '';
    await anchor.dir.sync().catch(() => {});
    const stats = await lstat(anchor.at, { bigint: true });
    return { version: versionOf(stats), size: tree.bytes, sha256, entries: tree.unpacker.entries };
  });
}

/** Closes a tree upload's directories and removes its staging directory unless it was committed. */
export async function discardTree(tree: StagedTree): Promise<void> {
  tree.archive.destroy(new Error('the upload was released'));
  await tree.unpacker.close();
  await tree.staging.handle.close().catch(() => {});
  if (tree.staging.at !== '') await removeTree(tree.anchor.dir, tree.anchor.dirReal, tree.staging.name).catch(() => {});
  await tree.anchor.dir.close().catch(() => {});
}

/** A tree download: the directory opened at begin, and what was sent of it. */
export interface TreeSource {
  call: FsCall;
  dir: { handle: FileHandle; real: string };
  /** Size and SHA-256 of the archive, once it was sent whole. */
  sent?: { bytes: number; sha256: string };
}

/** `fs/download/begin` with `format: 'tar'`: opens the directory and checks its real path. */
export async function openTreeSource(
  call: FsCall,
  path: string,
): Promise<{ source: TreeSource; mode: number; version: string } | ExecdError> {
  const target = targetOf(call, path);
  let dir;
  try {
    dir = await openDirectory(target);
  } catch (error) {
    return fsErrorOf(call.method, target, error);
  }
  try {
    const why = refusal(call.policy, dir.real, 'read');
    if (why) {
      await dir.handle.close();
      return denied(call.method, target, why);
    }
    const stats = await dir.handle.stat({ bigint: true });
    return { source: { call, dir }, mode: Number(stats.mode & 0o7777n), version: versionOf(stats) };
  } catch (error) {
    await dir.handle.close();
    return fsErrorOf(call.method, target, error);
  }
}

/** Answers `ok tar`, then the directory as a tar archive, and hangs up; a failure cuts the stream. */
export async function sendTree(source: TreeSource, socket: Socket): Promise<void> {
  const pack = tarPack();
  const hash = createHash('sha256');
  let bytes = 0;
  const packed = packTree(source.dir, pack, { skip: (real) => isHidden(source.call.policy, real) }).then(
    () => pack.finalize(),
    (error: unknown) => {
      pack.destroy(error as Error);
      throw error;
    },
  );
  packed.catch(() => {});
  try {
    socket.write(`${TAR_STREAM_ANSWER}\n`);
    await pumpArchive(
      pack,
      async (batch) => {
        if (!socket.write(batch)) await drained(socket);
      },
      (batch) => {
        bytes += batch.length;
        hash.update(batch);
      },
    );
    await packed;
    source.sent = { bytes, sha256: hash.digest('hex') };
    socket.end();
  } catch {
    // The client sees the archive cut short, and `fs/download/end` without a size says so.
    pack.destroy();
    socket.destroy();
    // The walk stops at its next entry; until then it may still use the directory's descriptor.
    await packed.catch(() => {});
  }
}
