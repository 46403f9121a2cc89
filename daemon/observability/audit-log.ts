/**
 * The audit log (`--audit-log FILE`, docs/observability.md): one JSON line when a command starts and one when it
 * ends, through the daemon log's rotating writer (log-file.ts) with the same `logMaxBytes` and
 * `logMaxFiles` bounds, so a flood of commands cannot fill the disk.
 *
 * A line holds who asked (session, client name, transport and peer), what (kind, sandbox mode,
 * cwd, the command text cut at `MAX_AUDIT_COMMAND_BYTES`), and how it ended. Never the output,
 * never an environment value, never a token: the start line is built from named fields only, not
 * from the request.
 */
import { RotatingLogFile, type LogFileLimits } from '../log/log-file.js';
import type { CommandEnd, CommandStart, DaemonObserver } from './observer.js';

/** The longest command text a line holds, in UTF-8 bytes; a longer one is cut and marked. */
export const MAX_AUDIT_COMMAND_BYTES = 4 * 1024;

/** The longest client name a line holds (a name is the client's to choose). */
const MAX_AUDIT_CLIENT_BYTES = 256;

/** `text` cut to at most `maxBytes` of UTF-8 on a character boundary; `cut` when it was. */
export function cutUtf8(text: string, maxBytes: number): { text: string; cut: boolean } {
  const bytes = Buffer.from(text);
  if (bytes.length <= maxBytes) return { text, cut: false };
  let end = maxBytes;
  // Back off continuation bytes (10xxxxxx) so no character is split.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end -= 1;
  return { text: bytes.subarray(0, end).toString('utf8'), cut: true };
}

/** The audit log's observer and its file. */
export interface AuditLog {
  observer: DaemonObserver;
  /** The bounds, read at each write (`config/set` applies). */
  bound(limits: () => LogFileLimits): void;
  /** Closes the file; later lines are dropped. */
  close(): void;
}

/** Opens (appends to) the audit log at `path`, mode 0600; throws a one-line reason when it cannot. */
export function openAuditLog(path: string): AuditLog {
  let file: RotatingLogFile;
  try {
    file = new RotatingLogFile(path);
  } catch (error) {
    throw new Error(`cannot open --audit-log ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, {
      cause: error,
    });
  }
  let commands = 0;
  const write = (line: object) => file.write(`${JSON.stringify(line)}\n`);
  const observer: DaemonObserver = {
    active: true,
    command(start: CommandStart) {
      const id = ++commands;
      const command = cutUtf8(start.command, MAX_AUDIT_COMMAND_BYTES);
      let pid: number | null = null;
      let started = false;
      let ended = false;
      const who = {
        id,
        session: start.sessionId,
        kind: start.kind,
        ...(start.requestKey !== undefined && { requestKey: start.requestKey }),
      };
      const writeStart = () => {
        started = true;
        write({
          time: new Date().toISOString(),
          event: 'command.start',
          ...who,
          client: start.clientName === undefined ? null : cutUtf8(start.clientName, MAX_AUDIT_CLIENT_BYTES).text,
          transport: start.peer.transport,
          ...(start.peer.address !== undefined && { peer: start.peer.address }),
          ...(start.peer.certSubject !== undefined && { certSubject: start.peer.certSubject }),
          mode: start.mode,
          cwd: start.cwd,
          command: command.text,
          ...(command.cut && { commandTruncated: true, commandBytes: Buffer.byteLength(start.command) }),
          pid,
        });
      };
      return {
        running: (given) => {
          // The end line names the process that ran last; the start line, the first.
          pid = given;
          if (!started) writeStart();
        },
        ended: (end: CommandEnd) => {
          if (ended) return;
          ended = true;
          // A command that never ran still gets its pair: the start line, without a pid.
          if (!started) writeStart();
          write({
            time: new Date().toISOString(),
            event: 'command.end',
            ...who,
            pid,
            result: end.result,
            exitCode: end.exitCode,
            signal: end.signal,
            timedOut: end.timedOut,
            ...(end.oomKilled !== undefined && { oomKilled: end.oomKilled }),
            denied: end.denied,
            durationMs: end.durationMs,
            outputBytes: end.outputBytes,
            ...(end.error !== undefined && { error: end.error }),
          });
        },
      };
    },
    request: () => {},
    fsBytes: () => {},
  };
  return {
    observer,
    bound: (limits) => {
      file.limits = limits;
    },
    close: () => file.close(),
  };
}
