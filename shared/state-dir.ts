/**
 * The state directory and the socket's directory (PROTOCOL.md): owner-only permissions, the token
 * file, and the refusal to use a directory someone else can reach.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PLATFORM, type PlatformFacts } from '../protocol/platform.js';

/** Files and folders inside the state dir. */
export function statePaths(stateDir: string) {
  return {
    token: join(stateDir, 'token'),
    /** The administrative token: grants the daemon-wide methods (daemon/sessions/admin.ts). */
    adminToken: join(stateDir, 'admin-token'),
    config: join(stateDir, 'config.json'),
    journal: join(stateDir, 'jobs.journal'),
    terminals: join(stateDir, 'terminals.journal'),
    /** Foreground runs started and not yet ended, for the next daemon after a crash. */
    runs: join(stateDir, 'runs.journal'),
    spill: join(stateDir, 'spill'),
    log: join(stateDir, 'execd.log'),
    /** Records of open uploads, so a restart removes their temp files. */
    fsUploads: join(stateDir, 'fs-uploads'),
  };
}

/**
 * Creates `dir` 0700 if missing; returns a reason to refuse it when it belongs to another user or
 * is accessible to group or others.
 */
export function checkPrivateDir(dir: string, platform: PlatformFacts = PLATFORM): string | undefined {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!platform.modeBits) return undefined;
  const info = statSync(dir);
  if (typeof process.getuid === 'function' && info.uid !== process.getuid()) {
    return `${dir} belongs to uid ${info.uid}, not to this user (uid ${process.getuid()})`;
  }
  const mode = info.mode & 0o777;
  if ((mode & 0o077) !== 0) {
    return `${dir} is accessible to group or others (mode ${mode.toString(8).padStart(4, '0')}); it must be 0700`;
  }
  return undefined;
}

/** Reads the token, creating it (32 random bytes, hex, mode 0600) if it does not exist. */
export function ensureToken(path: string): string {
  try {
    writeFileSync(path, randomBytes(32).toString('hex'), { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  chmodSync(path, 0o600);
  return readFileSync(path, 'utf8').trim();
}
