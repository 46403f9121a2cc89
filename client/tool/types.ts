/** The shapes a harness sees: a model-facing tool, its result, and its system-prompt section. */
import type { SessionLimits, UnitLimits } from '../../protocol/limits.js';
import type { SessionSandbox } from '../../protocol/sandbox.js';
import type { JobSnapshot } from '../../protocol/types.js';

/** A JSON Schema object, as handed to the model. */
export type JsonSchema = Record<string, unknown>;

/** What one tool call returns to the harness. */
export interface ToolResult<D = unknown> {
  /** Exactly what the model reads. */
  text: string;
  /** True only for infrastructure failures and refused arguments — never for a non-zero exit. */
  isError: boolean;
  /** The structured facts behind `text`, so a harness never parses text. */
  details: D;
}

/**
 * Inputs from trusted in-process callers (plugins, hooks): accepted by the library API, never
 * exposed in the model's schema (docs/library.md).
 */
export interface TrustedInputs {
  /** Written to the command's stdin, which is then closed. */
  stdin?: string;
  /** Extra environment variables. */
  env?: Record<string, string>;
  /** In-memory stdout capture limit of this run. */
  stdoutMaxBytes?: number;
  /** Resource limits of this command, lower than the session's (docs/limits.md). */
  limits?: UnitLimits;
}

/** Per-call options a harness passes to `execute`. */
export interface ExecuteOptions {
  /** Aborting it cancels the daemon run; `execute` then rejects with an `AbortError`. */
  signal?: AbortSignal;
  /** Trusted inputs of this call (shell tool only). */
  trusted?: TrustedInputs;
}

/** A tool the harness registers for its model. */
export interface ModelTool<D = unknown> {
  name: string;
  /** The tool description the model reads. */
  description: string;
  /** The parameters' JSON Schema, generated from the zod schema that validates them. */
  inputSchema: JsonSchema;
  /** Validates `args`, runs, renders. Rejects only with an `AbortError`. */
  execute(args: unknown, options?: ExecuteOptions): Promise<ToolResult<D>>;
}

/** A section the tool contributes to the system prompt. */
export interface SystemPromptSection {
  name: string;
  /** Sections are sorted by this number. */
  order: number;
  text: string;
}

/** A settled background job, handed to the harness (from `job/exited` or a reattach). */
export interface JobNotice {
  sessionId: string;
  job: JobSnapshot;
  /** One line for the model, e.g. `background job bash-3 completed (exit code: 0): make test`. */
  text: string;
}

/** The error a tool call rejects with when the harness aborted it. */
export class ToolAbortError extends Error {
  override name = 'AbortError';
  constructor(message = 'the tool call was aborted') {
    super(message);
  }
}

/** The harness's facts about the agent session the tool serves. */
export interface ToolSession {
  /** The daemon session id, e.g. the agent session's id. */
  id: string;
  /** The agent's working directory; relative `workdir`s resolve against it. */
  cwd?: string;
  /** Environment of every command of the session (trusted). */
  env?: Record<string, string>;
  /** The managed `DSH_*` snapshot (`DSH_HOME`, `DSH_SESSION_JSONL`, …). */
  dshEnv?: Record<string, string>;
  /**
   * The harness's home directory, given to every command as `DSH_HOME`; default: `dshEnv.DSH_HOME`,
   * else the tool options' `dshHome`, else `$DSH_HOME` of the harness process, else `~/.dsh`.
   */
  dshHome?: string;
  /**
   * The session's sandbox policy, when one is in force. `escalationTargets` is what a call may
   * widen it to (docs/sandbox.md); left out, the shell tools declare every wider mode when the harness gives
   * them an approval callback, and none otherwise.
   */
  sandbox?: SessionSandbox;
  /**
   * Resource limits of the session's commands (docs/limits.md): memory per command and in total, CPUs,
   * processes. The harness's, never the model's: the tool schema has no such field.
   */
  limits?: SessionLimits;
}
