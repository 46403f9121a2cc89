/**
 * What a confined command must not read: the daemon's socket and state directories (the token,
 * the configuration file, the journals, other sessions' output) and every secret file it was given
 * by path (the TLS private key, the certificate, which may hold a key too). One function, so that
 * every sandbox backend hides the same list.
 */
import { realpathSync } from 'node:fs';
import { dirname } from 'node:path';

/** What the daemon knows about its own places. */
export interface DaemonPaths {
  stateDir: string;
  socketPath: string;
  /** The socket is a file whose directory can be masked (not an abstract or Windows pipe name). */
  socketIsFile: boolean;
  /** Secret files given by path (`--tls-key`, `--tls-cert`), absolute. */
  secretFiles: readonly string[];
}

/** Directories and files a confined command sees empty. */
export interface HiddenPaths {
  dirs: string[];
  /** Each given path and the file it resolves to (a symlink hides nothing by itself). */
  files: string[];
}

/** The hidden places of a daemon; a secret file that does not exist (any more) is skipped. */
export function hiddenPaths(paths: DaemonPaths): HiddenPaths {
  const dirs = [paths.stateDir];
  if (paths.socketIsFile) dirs.push(dirname(paths.socketPath));
  const files = new Set<string>();
  for (const file of paths.secretFiles) {
    try {
      files.add(realpathSync(file));
      files.add(file);
    } catch {
      // Gone: nothing left to read there.
    }
  }
  return { dirs, files: [...files] };
}
