/**
 * The application error table of PROTOCOL.md. Every error execd reports has a stable name, a code
 * and a message that names what was wrong and the value; `error.data.code` carries the name.
 */

/** Application error codes, by stable name. */
export const ErrorCodes = {
  UNAUTHORIZED: -32001,
  SESSION_NOT_FOUND: -32002,
  JOB_NOT_FOUND: -32003,
  FORBIDDEN: -32004,
  BACKGROUND_DISABLED: -32005,
  SANDBOX_UNAVAILABLE: -32006,
  SPAWN_FAILED: -32007,
  LIMIT_EXCEEDED: -32008,
  SHUTTING_DOWN: -32009,
  TERMINAL_BUSY: -32010,
  TERMINALS_UNAVAILABLE: -32011,
  STDIN_CLOSED: -32012,
  OUTPUT_REMOVED: -32013,
  /** A resource limit (docs/limits.md) that no cgroup controller here can enforce; the message names it. */
  LIMIT_UNAVAILABLE: -32014,
  /** `daemon/upgrade` could not start the new program; the daemon serves on unchanged. The message says why. */
  UPGRADE_FAILED: -32015,
  /** File methods (docs/files.md): nothing at the path. */
  FS_NOT_FOUND: -32020,
  /** Something is already at the path. */
  FS_EXISTS: -32021,
  /** A component of the path is not a directory. */
  FS_NOT_A_DIRECTORY: -32022,
  /** The path is a directory where a file is needed. */
  FS_IS_A_DIRECTORY: -32023,
  /** Refused by the sandbox policy or by permissions; the message names the path and the rule. */
  FS_DENIED: -32024,
  /** `ifMatch` did not match; `data.version` is the current version (or `absent`). */
  FS_CONFLICT: -32025,
  /** The file system is full (ENOSPC) or the user's quota is spent (EDQUOT): no policy refused it. */
  FS_NO_SPACE: -32026,
  /** `initialize` asked for a protocol version this daemon does not speak; `data.supportedVersions` lists those it does. */
  PROTOCOL_VERSION_MISMATCH: -32030,
} as const;

/** The name of an application error (`error.data.code`). */
export type ErrorName = keyof typeof ErrorCodes;

/** JSON-RPC's own code for a params schema failure. */
export const INVALID_PARAMS = -32602;

/** The `data` member of every execd error response. */
export interface ErrorData {
  code: ErrorName | 'INVALID_PARAMS';
  /** `FS_CONFLICT`: the file's current version (`absent` when there is none). */
  version?: string;
  /** With `PROTOCOL_VERSION_MISMATCH`: the protocol versions the daemon speaks. */
  supportedVersions?: readonly number[];
}

/** The exact message of a refused `shell/start` (PROTOCOL.md, shared with the tool's validation). */
export const BACKGROUND_DISABLED_MESSAGE =
  'run_in_background is disabled for this deployment (enableRunInBackground: false)';

/**
 * A failure as a value: returned, never thrown, by daemon code; the server turns it into a JSON-RPC
 * error response at the boundary.
 */
export class ExecdError {
  constructor(
    readonly name: ErrorName | 'INVALID_PARAMS',
    readonly message: string,
    /** Facts beside the code, sent in `error.data` (`FS_CONFLICT`'s current `version`). */
    readonly details?: Omit<ErrorData, 'code'>,
  ) {}

  /** The JSON-RPC error code of this failure. */
  get code(): number {
    return this.name === 'INVALID_PARAMS' ? INVALID_PARAMS : ErrorCodes[this.name];
  }
}

/** Name of the error behind a JSON-RPC error code, if it is one of execd's. */
export function errorNameOf(code: number): ErrorName | 'INVALID_PARAMS' | undefined {
  if (code === INVALID_PARAMS) return 'INVALID_PARAMS';
  const entry = Object.entries(ErrorCodes).find(([, value]) => value === code);
  return entry?.[0] as ErrorName | undefined;
}
