/**
 * The daemon's log file, bounded: past `logMaxBytes` it is rotated (`execd.log` → `execd.log.1` →
 * … → `execd.log.<logMaxFiles>`, the oldest dropped), so the disk holds at most
 * `(logMaxFiles + 1) × logMaxBytes` of log whatever peers do. Writes are synchronous (a line is on
 * disk before the next one is made), and a write that fails is dropped rather than thrown.
 */
import { closeSync, fstatSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';

/** The bounds of the log file, read at each write so `config/set` applies. */
export interface LogFileLimits {
  logMaxBytes: number;
  logMaxFiles: number;
}

/** Bounds used until the configuration is known (the logger exists before it is read). */
export const DEFAULT_LOG_FILE_LIMITS: LogFileLimits = { logMaxBytes: 16 * 1024 * 1024, logMaxFiles: 3 };

/** An append-only, rotating log file: a pino destination. */
export class RotatingLogFile {
  private fd: number;
  private size: number;
  private closed = false;
  /** Read at each write; replaced once the configuration is loaded. */
  limits: () => LogFileLimits = () => DEFAULT_LOG_FILE_LIMITS;

  constructor(readonly path: string) {
    this.fd = openSync(path, 'a', 0o600);
    this.size = fstatSync(this.fd).size;
  }

  /** Appends one line, rotating first when it would pass the bound. */
  write(line: string): boolean {
    if (this.closed) return true;
    const bytes = Buffer.byteLength(line);
    const { logMaxBytes } = this.limits();
    if (this.size > 0 && this.size + bytes > logMaxBytes) this.rotate();
    try {
      writeSync(this.fd, line);
      this.size += bytes;
    } catch {
      // A full disk: the line is lost, the daemon goes on.
    }
    return true;
  }

  /** Closes the file; later writes are dropped. */
  close(): void {
    try {
      closeSync(this.fd);
    } catch {
      // Already closed.
    }
    this.closed = true;
  }

  private rotate(): void {
    const { logMaxFiles } = this.limits();
    try {
      closeSync(this.fd);
      if (logMaxFiles === 0) rmSync(this.path, { force: true });
      else {
        rmSync(`${this.path}.${logMaxFiles}`, { force: true });
        for (let n = logMaxFiles - 1; n >= 1; n--) {
          try {
            renameSync(`${this.path}.${n}`, `${this.path}.${n + 1}`);
          } catch {
            // That generation does not exist yet.
          }
        }
        renameSync(this.path, `${this.path}.1`);
      }
    } catch {
      // Cannot rotate (a read-only directory): the file is reopened and grows no further than now.
    }
    this.fd = openSync(this.path, 'a', 0o600);
    this.size = fstatSync(this.fd).size;
  }
}
