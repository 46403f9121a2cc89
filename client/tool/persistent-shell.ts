/**
 * The persistent `bash` (docs/library.md): one daemon terminal per agent session, opened on first use.
 * A call runs its command with `terminal/run`; while an earlier command still runs (it waits for
 * input, or went silent), the call's command is typed into it with `terminal/send` and the result
 * covers what it printed since. Once the shell is gone (exit, kill, a timeout it did not survive),
 * the result says so with the reset line and the next call opens a fresh shell in the workspace.
 * A shell that ended between calls without the model being told (the daemon restarted under a
 * reconnecting client, a restarted harness finds only its ended shell) is replaced the same way, and
 * the fresh shell's first result says in one line that the earlier state was lost.
 */
import {
  ConfigGet,
  TerminalClose,
  TerminalList,
  TerminalOpen,
  TerminalRead,
  TerminalRun,
  TerminalSend,
  TerminalSignal,
} from '../../protocol/methods.js';
import type { TerminalRunResult, TerminalSendResult, TerminalSnapshot } from '../../protocol/terminal.js';
import type { ExecdClient } from '../connection.js';
import {
  plainTerminalText,
  renderPersistentResult,
  shellReplacedLine,
  type ExitFacts,
  type PersistentOutcome,
} from '../terminal-render.js';
import { jsonSchemaOf } from './args.js';
import { persistentDescription } from './terminal-description.js';
import { persistentArgsSchema, validatePersistentArgs, type PersistentArgs } from './terminal-args.js';
import { callFailure, throwIfAborted, type CallFailure } from './failure.js';
import type { ExecuteOptions, ModelTool, ToolResult, ToolSession } from './types.js';
import { resolveWorkdir } from './workdir.js';

/** The name of the persistent shell's terminal, by which a restarted harness finds it again. */
export const PERSISTENT_SHELL_NAME = 'persistent bash';

/** The default silence after which a running command is reported as still running. */
export const DEFAULT_IDLE_MS = 3_000;

/** The structured facts of a persistent `bash` call. */
export type PersistentShellDetails =
  | { kind: 'run'; terminalId: string; result: TerminalRunResult }
  | { kind: 'typed'; terminalId: string; result: TerminalSendResult; interrupted?: boolean }
  | { kind: 'reset'; terminalId: string; terminal?: TerminalSnapshot }
  | { kind: 'invalid'; message: string }
  | CallFailure;

/** What the persistent `bash` is built from. */
export interface PersistentShellOptions {
  client: ExecdClient;
  session: ToolSession;
  /** Silence after which a running command is reported as still running (default 3000 ms). */
  idleMs?: number;
  /** Replaces the description's opening sentences. */
  description?: string;
  /**
   * A command still going after this many ms is left running (`terminal/run` `yieldMs`): the model
   * reads its output so far, and its next call shows what it printed since. Default: off.
   */
  yieldMs?: number;
}

/** Where the agent's shell stands between calls. */
type ShellState =
  | { phase: 'none' }
  /** At its prompt: the next call runs a command. */
  | { phase: 'ready'; terminalId: string }
  /** A command still runs: the next call is typed into it. `cursor`: where the model's view of the stream ends. */
  | { phase: 'running'; terminalId: string; cursor: number }
  /** An aborted call left it in an unknown state: the next call asks the daemon. */
  | { phase: 'unknown'; terminalId: string };

/** Error names that mean the terminal is no longer there (closed by idle close, lost in a daemon restart). */
const GONE = new Set(['JOB_NOT_FOUND', 'FORBIDDEN']);

/** The persistent `bash` tool with its per-session shell. */
export interface PersistentShellTool extends ModelTool<PersistentShellDetails> {
  /** The current terminal's id, if one is open. */
  terminalId(): string | undefined;
  /** Closes the shell's terminal (everything on it is killed). */
  close(): Promise<void>;
}

/** Builds the persistent `bash` of a session. */
export function createPersistentShellTool(options: PersistentShellOptions): PersistentShellTool {
  return new PersistentShell(options);
}

/**
 * The persistent `bash` of one session: its shell's state between calls and the calls that move it.
 * The tool's members (`execute`, `terminalId`, `close`) are the instance's own properties, so the
 * tool can be passed around (or spread) as a plain object.
 */
class PersistentShell implements PersistentShellTool {
  readonly name = 'bash';
  readonly description: string;
  readonly inputSchema: PersistentShellTool['inputSchema'];
  private readonly client: ExecdClient;
  private readonly session: ToolSession;
  private readonly idleMs: number;
  private readonly yieldMs: number | undefined;
  private state: ShellState = { phase: 'none' };
  /** The first call looks for the session's shell from an earlier harness run before opening one. */
  private adopted = false;
  /**
   * Calls are serialised: the shell runs one command at a time, and a concurrent call would only
   * meet TERMINAL_BUSY.
   */
  private queue: Promise<unknown> = Promise.resolve();
  /** How the shell the model last used ended, when the next result comes from a fresh one it was not told of. */
  private replaced: ExitFacts | undefined;
  /**
   * The daemon the shell lives in: a reconnecting client may come back to a restarted one, whose
   * terminals all ended.
   */
  private daemonStartedAt: string;

  constructor(options: PersistentShellOptions) {
    this.client = options.client;
    this.session = options.session;
    this.idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
    this.yieldMs = options.yieldMs;
    this.description = persistentDescription(options.description);
    this.inputSchema = jsonSchemaOf(persistentArgsSchema());
    this.daemonStartedAt = this.client.info.daemon.startedAt;
  }

  /** Runs one call after those before it have answered. */
  readonly execute = (raw: unknown, { signal }: ExecuteOptions = {}): Promise<ToolResult<PersistentShellDetails>> => {
    const next = this.queue.then(() => this.call(raw, signal));
    this.queue = next.catch(() => undefined);
    return next;
  };

  /** The current terminal's id, if one is open. */
  readonly terminalId = (): string | undefined => (this.state.phase === 'none' ? undefined : this.state.terminalId);

  /** Closes the shell's terminal (everything on it is killed). */
  readonly close = async (): Promise<void> => {
    const current = this.state;
    this.state = { phase: 'none' };
    if (current.phase !== 'none')
      await this.client.call(TerminalClose, { sessionId: this.session.id, terminalId: current.terminalId });
  };

  /** The replaced-shell line for the next result, once. */
  private takeNotice(): string | undefined {
    const notice = this.replaced && shellReplacedLine(this.replaced);
    this.replaced = undefined;
    return notice;
  }

  private async openShell(signal: AbortSignal | undefined): Promise<string> {
    const opened = await this.client.call(
      TerminalOpen,
      { sessionId: this.session.id, name: PERSISTENT_SHELL_NAME, cwd: resolveWorkdir(undefined, this.session) },
      { signal },
    );
    return opened.terminal.id;
  }

  /** What becomes of the shell after a call ended this way. */
  private nextState(terminalId: string, outcome: PersistentOutcome, cursor: number): ShellState {
    switch (outcome.state) {
      case 'waiting_for_input':
      case 'idle':
      case 'running':
        return { phase: 'running', terminalId, cursor };
      case 'exited':
        return { phase: 'none' };
      case 'timed_out':
        return outcome.interrupted ? { phase: 'ready', terminalId } : { phase: 'none' };
      case 'completed':
        return { phase: 'ready', terminalId };
    }
  }

  private async runCommand(terminalId: string, args: PersistentArgs, signal: AbortSignal | undefined) {
    const result = await this.client.call(
      TerminalRun,
      {
        sessionId: this.session.id,
        terminalId,
        command: args.command,
        timeoutMs: args.timeoutMs,
        idleMs: this.idleMs,
        ...(this.yieldMs === undefined ? {} : { yieldMs: this.yieldMs }),
      },
      { signal },
    );
    throwIfAborted(signal);
    // The shell is not at its prompt (a program runs there, or it was replaced by `exec`): the
    // command is typed into what is there, as while a command still runs.
    if (result.state === 'not_at_prompt') return this.typeInto({ terminalId, cursor: result.cursor }, args, signal);
    const outcome = this.runOutcome(result);
    this.state = this.nextState(terminalId, outcome, result.cursor);
    const text = renderPersistentResult({
      output: result.output,
      truncated: result.truncated,
      spillPath: result.outputSpillPath,
      outcome,
      notice: this.takeNotice(),
    });
    return { text, isError: false, details: { kind: 'run' as const, terminalId, result } };
  }

  private runOutcome(result: TerminalRunResult): PersistentOutcome {
    switch (result.state) {
      case 'completed':
        return { state: 'completed', exitCode: result.exitCode ?? null };
      case 'waiting_for_input':
        return { state: 'waiting_for_input' };
      case 'idle':
        return { state: 'idle', idleMs: this.idleMs };
      case 'running':
        return { state: 'running', yieldMs: this.yieldMs ?? 0 };
      case 'timed_out': {
        return {
          state: 'timed_out',
          // The daemon names the timeout it applied.
          timeoutMs: result.timeoutMs,
          interrupted: result.interrupted === true,
          ...(result.stoppedWith ? { stopped: result.stoppedWith } : {}),
        };
      }
      case 'exited':
        return exitedOutcome(result.terminal);
      // runCommand types into the program instead (see there).
      case 'not_at_prompt':
        return { state: 'waiting_for_input' };
    }
  }

  /**
   * Types the call's command into the program that still runs. A timeout is handled like
   * `terminal/run`'s: SIGINT to the foreground group; the shell is kept when its prompt comes back
   * within `graceMs`, else the terminal is closed.
   */
  private async typeInto(
    running: { terminalId: string; cursor: number },
    args: PersistentArgs,
    signal: AbortSignal | undefined,
  ) {
    const { terminalId } = running;
    const send = (text: string, submit: boolean, timeoutMs?: number) =>
      this.client.call(
        TerminalSend,
        { sessionId: this.session.id, terminalId, text, submit, idleMs: this.idleMs, timeoutMs },
        { signal },
      );
    // What the command printed since the last result (it may even have ended meanwhile) comes first;
    // when that is more than one read holds, its tail (a read without offset), marked as cut.
    const read = (offset?: number) =>
      this.client.call(TerminalRead, { sessionId: this.session.id, terminalId, offset }, { signal });
    let since = await read(running.cursor);
    const cut = since.nextOffset < since.terminal.outputBytes || since.droppedBytes > 0;
    if (cut) since = await read();
    let result = await send(args.command, true, args.timeoutMs);
    result = { ...result, output: since.text + result.output, truncated: result.truncated || cut };
    throwIfAborted(signal);
    let outcome: PersistentOutcome;
    let interrupted: boolean | undefined;
    switch (result.waitReason) {
      case 'prompt':
        // The command ended: its status comes from the prompt marker, shown like a run's.
        outcome = { state: 'completed', exitCode: result.exitCode ?? null };
        break;
      case 'stdin_read':
      case 'not_at_prompt':
        outcome = { state: 'waiting_for_input' };
        break;
      // `yielded`: only a terminal/run answers it; a send that did would have left the program running.
      case 'inferred_idle':
      case 'yielded':
        outcome = { state: 'idle', idleMs: this.idleMs };
        break;
      case 'session_exit':
        outcome = exitedOutcome(result.terminal);
        break;
      case 'timeout': {
        // The daemon names the timeout it applied; the grace is read only when a stop needs it.
        const { timeoutMs } = result;
        const { graceMs } = await this.client.call(ConfigGet, {});
        const stop = await this.stopTyped(terminalId, graceMs, signal);
        interrupted = stop.after.waitReason === 'prompt';
        if (!interrupted && stop.after.terminal.status === 'running')
          await this.client.call(TerminalClose, { sessionId: this.session.id, terminalId }, { signal });
        const after = stop.after;
        result = { ...after, output: result.output + stop.output, truncated: result.truncated || after.truncated };
        outcome = {
          state: 'timed_out',
          timeoutMs,
          interrupted,
          ...(interrupted && stop.stopped ? { stopped: stop.stopped } : {}),
        };
        break;
      }
    }
    this.state = this.nextState(terminalId, outcome, result.cursor);
    const output = plainTerminalText(result.output);
    const text = renderPersistentResult({ output, truncated: result.truncated, outcome, notice: this.takeNotice() });
    return { text, isError: false, details: { kind: 'typed' as const, terminalId, result, interrupted } };
  }

  /**
   * Ends a command that a typed call timed out on as `terminal/run` does: SIGINT, then SIGTERM and
   * SIGKILL, each to the foreground group and each followed by up to `graceMs` of waiting for the
   * prompt; never TERM or KILL while the shell's own group holds the foreground (the caller closes
   * the terminal then). Silence or a read of the terminal (a `less` that took SIGINT) is not the
   * prompt: the wait goes on until it comes or `graceMs` is over.
   */
  private async stopTyped(terminalId: string, graceMs: number, signal: AbortSignal | undefined) {
    const sessionId = this.session.id;
    let output = '';
    let stopped: { signal: string; command: string } | undefined;
    let after: TerminalSendResult | undefined;
    for (const step of ['SIGINT', 'SIGTERM', 'SIGKILL'] as const) {
      const foreground = after?.terminal.foreground;
      if (step !== 'SIGINT' && !foreground) break;
      const deadline = Date.now() + graceMs;
      // The first wait starts before the signal (requests are handled in order), so the prompt
      // that the signal brings back is seen as arriving after it.
      let waited = this.client.call(
        TerminalSend,
        { sessionId, terminalId, text: '', submit: false, idleMs: graceMs, timeoutMs: graceMs },
        { signal },
      );
      const sent = await this.client.call(TerminalSignal, { sessionId, terminalId, signal: step }, { signal });
      stopped = { signal: step, command: foreground?.command ?? '' };
      for (;;) {
        after = await waited;
        throwIfAborted(signal);
        output += after.output;
        const left = deadline - Date.now();
        if (after.waitReason === 'prompt' || after.waitReason === 'session_exit' || left <= 0) break;
        waited = this.client.call(
          TerminalSend,
          { sessionId, terminalId, text: '', submit: false, idleMs: left, timeoutMs: left },
          { signal },
        );
      }
      if (after.waitReason === 'prompt' || after.waitReason === 'session_exit' || !sent.delivered) break;
    }
    return { after: after!, output, stopped };
  }

  /**
   * A running persistent shell this session already has (the harness restarted), if any; else how
   * the newest ended one ended (a daemon restart ends them all), which the fresh shell will say.
   */
  private async findEarlierShell(signal: AbortSignal | undefined): Promise<string | undefined> {
    const list = await this.client.call(TerminalList, { sessionId: this.session.id }, { signal });
    const shells = list.filter((item) => item.name === PERSISTENT_SHELL_NAME);
    const running = shells.find((item) => item.status === 'running' && !item.busy);
    const ended = shells.filter((item) => item.status === 'exited').at(-1);
    if (!running && ended) this.replaced = exitFacts(ended);
    return running?.id;
  }

  /** After an aborted call or a daemon restart: whether the shell is still there and a command holds it. */
  private async settleUnknown(terminalId: string, signal: AbortSignal | undefined): Promise<ShellState> {
    const terminal = await this.snapshotOf(terminalId, signal);
    if (!terminal || terminal.status === 'exited') {
      this.replaced = terminal
        ? exitFacts(terminal)
        : { exitCode: null, signal: null, detail: 'no longer in the daemon' };
      return { phase: 'none' };
    }
    return terminal.foreground
      ? { phase: 'running', terminalId, cursor: terminal.outputBytes }
      : { phase: 'ready', terminalId };
  }

  private async snapshotOf(terminalId: string, signal: AbortSignal | undefined) {
    const list = await this.client.call(TerminalList, { sessionId: this.session.id }, { signal });
    return list.find((item) => item.id === terminalId);
  }

  /** The answer when the shell turned out to be gone before the call could use it. */
  private resetResult(terminalId: string, terminal?: TerminalSnapshot): ToolResult<PersistentShellDetails> {
    this.state = { phase: 'none' };
    const outcome = terminal ? exitedOutcome(terminal) : { state: 'exited' as const, exitCode: null, signal: null };
    return {
      text: renderPersistentResult({ output: '', truncated: false, outcome }),
      isError: false,
      details: { kind: 'reset', terminalId, terminal },
    };
  }

  private async call(raw: unknown, signal: AbortSignal | undefined): Promise<ToolResult<PersistentShellDetails>> {
    throwIfAborted(signal);
    const validated = validatePersistentArgs(raw);
    if (!validated.ok)
      return { text: validated.message, isError: true, details: { kind: 'invalid', message: validated.message } };
    const args = validated.args;
    let terminalId: string | undefined;
    try {
      if (this.client.info.daemon.startedAt !== this.daemonStartedAt) {
        this.daemonStartedAt = this.client.info.daemon.startedAt;
        if (this.state.phase !== 'none') this.state = { phase: 'unknown', terminalId: this.state.terminalId };
      }
      if (!this.adopted) {
        this.adopted = true;
        const earlier = await this.findEarlierShell(signal);
        if (earlier && this.state.phase === 'none') this.state = { phase: 'unknown', terminalId: earlier };
      }
      if (this.state.phase === 'unknown') this.state = await this.settleUnknown(this.state.terminalId, signal);
      if (this.state.phase === 'none') this.state = { phase: 'ready', terminalId: await this.openShell(signal) };
      terminalId = this.state.terminalId;
      return this.state.phase === 'running'
        ? await this.typeInto(this.state, args, signal)
        : await this.runCommand(terminalId, args, signal);
    } catch (error) {
      if (signal?.aborted) {
        if (this.state.phase !== 'none') this.state = { phase: 'unknown', terminalId: this.state.terminalId };
        throwIfAborted(signal);
      }
      const failure = callFailure(error);
      if (terminalId !== undefined && GONE.has(failure.details.errorName)) return this.resetResult(terminalId);
      return failure;
    }
  }
}

/** How a terminal's program ended, from its snapshot. */
function exitFacts(terminal: TerminalSnapshot): ExitFacts {
  return { exitCode: terminal.exitCode, signal: terminal.signal, detail: terminal.detail };
}

/** The `exited` outcome from the snapshot of a terminal whose program ended. */
function exitedOutcome(terminal: TerminalSnapshot): PersistentOutcome {
  return { state: 'exited', ...exitFacts(terminal) };
}
