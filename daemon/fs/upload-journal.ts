/**
 * Where abandoned uploads' temp files are: one record per open upload in `<stateDir>/fs-uploads/`
 * holding the temp file's real path. A record outlives a crash, so the next daemon removes what
 * the last one left half-written; a normal end (commit, abort, disconnect) removes its record.
 */
import { lstat, mkdir, readdir, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { basename, isAbsolute, join } from 'node:path';
import { TREE_STAGING_PATTERN } from './tree-transfers.js';
import { TEMP_FILE_PATTERN } from './write-ops.js';

/** Records the temp file of upload `id`; returns the record's path. */
export async function recordUpload(dir: string, id: string, tempReal: string): Promise<string> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const record = join(dir, `${id}-${process.pid}`);
  await writeFile(record, tempReal, { mode: 0o600 });
  return record;
}

/** Forgets a record. */
export async function forgetUpload(record: string): Promise<void> {
  await rm(record, { force: true });
}

/**
 * At start: removes the temp file of every recorded upload (only a plain file with a temp file's
 * name, or a directory with a tree upload's staging name: a record can never make the daemon
 * delete anything else), then the records. Returns how many were removed.
 */
export async function removeAbandonedUploads(dir: string): Promise<number> {
  const records = await readdir(dir).catch(() => [] as string[]);
  let removed = 0;
  for (const name of records) {
    const record = join(dir, name);
    const temp = (await readFile(record, 'utf8').catch(() => '')).trim();
    if (isAbsolute(temp) && TREE_STAGING_PATTERN.test(basename(temp))) {
      const stats = await lstat(temp).catch(() => undefined);
      // rm never follows a symlink inside the tree it removes.
      if (
        stats?.isDirectory() &&
        (await rm(temp, { recursive: true, force: true }).then(
          () => true,
          () => false,
        ))
      )
        removed++;
    } else if (isAbsolute(temp) && TEMP_FILE_PATTERN.test(basename(temp))) {
      const stats = await lstat(temp).catch(() => undefined);
      if (
        stats?.isFile() &&
        (await unlink(temp).then(
          () => true,
          () => false,
        ))
      )
        removed++;
    }
    await rm(record, { force: true });
  }
  return removed;
}
