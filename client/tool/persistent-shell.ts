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
  const { client, session } = options;
  const idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
  let state: ShellState = { phase: 'none' };
  // The first call looks for the session's shell from an earlier harness run before opening one.
  let adopted = false;
  // Calls are serialised: the shell runs one command at a time, and a concurrent call would only
  // meet TERMINAL_BUSY.
  let queue: Promise<unknown> = Promise.resolve();
  // How the shell the model last used ended, when the next result comes from a fresh one it was not told of.
  let replaced: ExitFacts | undefined;
  // The daemon the shell lives in: a reconnecting client may come back to a restarted one, whose
  // terminals all ended.
  let daemonStartedAt = client.info.daemon.startedAt;

  /** The replaced-shell line for the next result, once. */
  function takeNotice(): string | undefined {
    const notice = replaced && shellReplacedLine(replaced);
    replaced = undefined;
    return notice;
  }

  async function openShell(signal: AbortSignal | undefined): Promise<string> {
    const opened = await client.call(
      TerminalOpen,
      { sessionId: session.id, name: PERSISTENT_SHELL_NAME, cwd: resolveWorkdir(undefined, session) },
      { signal },
    );
    return opened.terminal.id;
  }

  /** What becomes of the shell after a call ended this way. */
  function nextState(terminalId: string, outcome: PersistentOutcome, cursor: number): ShellState {
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

  async function runCommand(terminalId: string, args: PersistentArgs, signal: AbortSignal | undefined) {
    const result = await client.call(
      TerminalRun,
      {
        sessionId: session.id,
        terminalId,
        command: args.command,
        timeoutMs: args.timeoutMs,
        idleMs,
        ...(options.yieldMs === undefined ? {} : { yieldMs: options.yieldMs }),
      },
      { signal },
    );
    throwIfAborted(signal);
    // The shell is not at its prompt (a program runs there, or it was replaced by `exec`): the
    // command is typed into what is there, as while a command still runs.
    if (result.state === 'not_at_prompt') return typeInto({ terminalId, cursor: result.cursor }, args, signal);
    const outcome = runOutcome(result);
    state = nextState(terminalId, outcome, result.cursor);
    const text = renderPersistentResult({
      output: result.output,
      truncated: result.truncated,
      spillPath: result.outputSpillPath,
      outcome,
      notice: takeNotice(),
    });
    return { text, isError: false, details: { kind: 'run' as const, terminalId, result } };
  }

  function runOutcome(result: TerminalRunResult): PersistentOutcome {
    switch (result.state) {
      case 'completed':
        return { state: 'completed', exitCode: result.exitCode ?? null };
      case 'waiting_for_input':
        return { state: 'waiting_for_input' };
      case 'idle':
        return { state: 'idle', idleMs };
      case 'running':
        return { state: 'running', yieldMs: options.yieldMs ?? 0 };
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
  async function typeInto(
    running: { terminalId: string; cursor: number },
    args: PersistentArgs,
    signal: AbortSignal | undefined,
  ) {
    const { terminalId } = running;
    const send = (text: string, submit: boolean, timeoutMs?: number) =>
      client.call(TerminalSend, { sessionId: session.id, terminalId, text, submit, idleMs, timeoutMs }, { signal });
    // What the command printed since the last result (it may even have ended meanwhile) comes first;
    // when that is more than one read holds, its tail (a read without offset), marked as cut.
    const read = (offset?: number) =>
      client.call(TerminalRead, { sessionId: session.id, terminalId, offset }, { signal });
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
        outcome = { state: 'idle', idleMs };
        break;
      case 'session_exit':
        outcome = exitedOutcome(result.terminal);
        break;
      case 'timeout': {
        // The daemon names the timeout it applied; the grace is read only when a stop needs it.
        const { timeoutMs } = result;
        const { graceMs } = await client.call(ConfigGet, {});
        const stop = await stopTyped(terminalId, graceMs, signal);
        interrupted = stop.after.waitReason === 'prompt';
        if (!interrupted && stop.after.terminal.status === 'running')
          await client.call(TerminalClose, { sessionId: session.id, terminalId }, { signal });
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
    state = nextState(terminalId, outcome, result.cursor);
    const output = plainTerminalText(result.output);
    const text = renderPersistentResult({ output, truncated: result.truncated, outcome, notice: takeNotice() });
    return { text, isError: false, details: { kind: 'typed' as const, terminalId, result, interrupted } };
  }

  /**
   * Ends a command that a typed call timed out on as `terminal/run` does: SIGINT, then SIGTERM and
   * SIGKILL, each to the foreground group and each followed by up to `graceMs` of waiting for the
   * prompt; never TERM or KILL while the shell's own group holds the foreground (the caller closes
   * the terminal then). Silence or a read of the terminal (a `less` that took SIGINT) is not the
   * prompt: the wait goes on until it comes or `graceMs` is over.
   */
  async function stopTyped(terminalId: string, graceMs: number, signal: AbortSignal | undefined) {
    const sessionId = session.id;
    let output = '';
    let stopped: { signal: string; command: string } | undefined;
    let after: TerminalSendResult | undefined;
    for (const step of ['SIGINT', 'SIGTERM', 'SIGKILL'] as const) {
      const foreground = after?.terminal.foreground;
      if (step !== 'SIGINT' && !foreground) break;
      const deadline = Date.now() + graceMs;
      // The first wait starts before the signal (requests are handled in order), so the prompt
      // that the signal brings back is seen as arriving after it.
      let waited = client.call(
        TerminalSend,
        { sessionId, terminalId, text: '', submit: false, idleMs: graceMs, timeoutMs: graceMs },
        { signal },
      );
      const sent = await client.call(TerminalSignal, { sessionId, terminalId, signal: step }, { signal });
      stopped = { signal: step, command: foreground?.command ?? '' };
      for (;;) {
        after = await waited;
        throwIfAborted(signal);
        output += after.output;
        const left = deadline - Date.now();
        if (after.waitReason === 'prompt' || after.waitReason === 'session_exit' || left <= 0) break;
        waited = client.call(
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
  async function findEarlierShell(signal: AbortSignal | undefined): Promise<string | undefined> {
    const list = await client.call(TerminalList, { sessionId: session.id }, { signal });
    const shells = list.filter((item) => item.name === PERSISTENT_SHELL_NAME);
    const running = shells.find((item) => item.status === 'running' && !item.busy);
    const ended = shells.filter((item) => item.status === 'exited').at(-1);
    if (!running && ended) replaced = exitFacts(ended);
    return running?.id;
  }

  /** After an aborted call or a daemon restart: whether the shell is still there and a command holds it. */
  async function settleUnknown(terminalId: string, signal: AbortSignal | undefined): Promise<ShellState> {
    const terminal = await snapshotOf(terminalId, signal);
    if (!terminal || terminal.status === 'exited') {
      replaced = terminal ? exitFacts(terminal) : { exitCode: null, signal: null, detail: 'no longer in the daemon' };
      return { phase: 'none' };
    }
    return terminal.foreground
      ? { phase: 'running', terminalId, cursor: terminal.outputBytes }
      : { phase: 'ready', terminalId };
  }

  async function snapshotOf(terminalId: string, signal: AbortSignal | undefined) {
    const list = await client.call(TerminalList, { sessionId: session.id }, { signal });
    return list.find((item) => item.id === terminalId);
  }

  /** The answer when the shell turned out to be gone before the call could use it. */
  function resetResult(terminalId: string, terminal?: TerminalSnapshot): ToolResult<PersistentShellDetails> {
    state = { phase: 'none' };
    const outcome = terminal ? exitedOutcome(terminal) : { state: 'exited' as const, exitCode: null, signal: null };
    return {
      text: renderPersistentResult({ output: '', truncated: false, outcome }),
      isError: false,
      details: { kind: 'reset', terminalId, terminal },
    };
  }

  async function call(raw: unknown, signal: AbortSignal | undefined): Promise<ToolResult<PersistentShellDetails>> {
    throwIfAborted(signal);
    const validated = validatePersistentArgs(raw);
    if (!validated.ok)
      return { text: validated.message, isError: true, details: { kind: 'invalid', message: validated.message } };
    const args = validated.args;
    let terminalId: string | undefined;
    try {
      if (client.info.daemon.startedAt !== daemonStartedAt) {
        daemonStartedAt = client.info.daemon.startedAt;
        if (state.phase !== 'none') state = { phase: 'unknown', terminalId: state.terminalId };
      }
      if (!adopted) {
        adopted = true;
        const earlier = await findEarlierShell(signal);
        if (earlier && state.phase === 'none') state = { phase: 'unknown', terminalId: earlier };
      }
      if (state.phase === 'unknown') state = await settleUnknown(state.terminalId, signal);
      if (state.phase === 'none') state = { phase: 'ready', terminalId: await openShell(signal) };
      terminalId = state.terminalId;
      return state.phase === 'running'
        ? await typeInto(state, args, signal)
        : await runCommand(terminalId, args, signal);
    } catch (error) {
      if (signal?.aborted) {
        if (state.phase !== 'none') state = { phase: 'unknown', terminalId: state.terminalId };
        throwIfAborted(signal);
      }
      const failure = callFailure(error);
      if (terminalId !== undefined && GONE.has(failure.details.errorName)) return resetResult(terminalId);
      return failure;
    }
  }

  const execute = (raw: unknown, { signal }: ExecuteOptions = {}) => {
    const next = queue.then(() => call(raw, signal));
    queue = next.catch(() => undefined);
    return next;
  };

  return {
    name: 'bash',
    description: persistentDescription(options.description),
    inputSchema: jsonSchemaOf(persistentArgsSchema()),
    execute,
    terminalId: () => (state.phase === 'none' ? undefined : state.terminalId),
    async close() {
      const current = state;
      state = { phase: 'none' };
      if (current.phase !== 'none')
        await client.call(TerminalClose, { sessionId: session.id, terminalId: current.terminalId });
    },
  };
}

/** How a terminal's program ended, from its snapshot. */
function exitFacts(terminal: TerminalSnapshot): ExitFacts {
  return { exitCode: terminal.exitCode, signal: terminal.signal, detail: terminal.detail };
}

/** The `exited` outcome from the snapshot of a terminal whose program ended. */
function exitedOutcome(terminal: TerminalSnapshot): PersistentOutcome {
  return { state: 'exited', ...exitFacts(terminal) };
}
