/** A system call's failure at a path, as the file methods' error value (docs/files.md). */
import { ExecdError } from '../../protocol/errors.js';

/** The errno code of a failed call, if it has one. */
export function errnoOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/** `FS_DENIED` naming the method, the path and the rule. */
export function denied(method: string, path: string, why: string): ExecdError {
  return new ExecdError('FS_DENIED', `${method} ${path} refused: ${why}`);
}

/** Turns a failed call into its `FS_*` error; anything unexpected stays a message with its errno. */
export function fsErrorOf(method: string, path: string, error: unknown): ExecdError {
  const code = errnoOf(error);
  switch (code) {
    case 'ENOENT':
      return new ExecdError('FS_NOT_FOUND', `${method} ${path}: no such file or directory`);
    case 'EEXIST':
      return new ExecdError('FS_EXISTS', `${method} ${path}: already exists`);
    case 'ENOTEMPTY':
      return new ExecdError('FS_EXISTS', `${method} ${path}: directory not empty (pass recursive to remove it)`);
    case 'ENOTDIR':
      return new ExecdError('FS_NOT_A_DIRECTORY', `${method} ${path}: a component of the path is not a directory`);
    case 'EISDIR':
      return new ExecdError('FS_IS_A_DIRECTORY', `${method} ${path}: is a directory`);
    case 'ELOOP':
      return denied(method, path, 'it is a symlink, which this call does not follow');
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return denied(method, path, `permission denied (${code})`);
    case 'ENOSPC':
    case 'EDQUOT':
      return new ExecdError('FS_NO_SPACE', `${method} ${path}: no space left on the file system (${code})`);
    case 'EXDEV':
      return denied(method, path, 'source and target are on different file systems');
    case undefined:
    default:
      return new ExecdError('FS_DENIED', `${method} ${path} failed: ${(error as Error).message}`);
  }
}
