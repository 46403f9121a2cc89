/** How a tool call fails: an abort raises the harness's abort error; everything else is a result. */
import { ExecdRpcError } from '../connection.js';
import { ToolAbortError, type ToolResult } from './types.js';

/** The structured facts of an infrastructure failure (daemon error, lost connection). */
export interface CallFailure {
  kind: 'error';
  /** The daemon's stable error name (`SPAWN_FAILED`, `JOB_NOT_FOUND`…), or `CONNECTION`. */
  errorName: string;
  message: string;
}

/** Rejects with a `ToolAbortError` when the harness aborted the call. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new ToolAbortError();
}

/** An infrastructure failure as an error result the model reads: the daemon's one-line message. */
export function callFailure(error: unknown): ToolResult<CallFailure> {
  const message = error instanceof Error ? error.message : String(error);
  const errorName = error instanceof ExecdRpcError ? error.errorName : 'CONNECTION';
  return { text: message, isError: true, details: { kind: 'error', errorName, message } };
}
