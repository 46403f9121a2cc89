/**
 * What the model reads from the persistent `bash` and the terminal tools (docs/library.md) — byte-exact,
 * built from the same pieces as the run results: the output (tail kept, truncation line), `(no output)`, then
 * marker lines, the exit marker last so that `parseExitStatus` recovers it.
 */
import type { LimitReport } from '../protocol/limits.js';
import type { TerminalSendResult } from '../protocol/terminal.js';
import { appendExitMarker, appendLine, limitLines, timeoutLine } from '../shared/render.js';

// ESC and BEL as regex escapes: matching these control characters is the point here.
const ESC = String.raw`\x1b`;
const BEL = String.raw`\x07`;
/** CSI sequences (colours, cursor moves, bracketed-paste toggles). */
const CSI = String.raw`${ESC}\[[0-?]*[ -/]*[@-~]`;
/** OSC strings, ended by BEL or ST (`ESC \`). */
const OSC = String.raw`${ESC}\][^${BEL}${ESC}]*(?:${BEL}|${ESC}\\)`;
/** Two-byte escapes. */
const TWO_BYTE = String.raw`${ESC}[@-Z\\-_]`;
/** CSI sequences, OSC strings and two-byte escapes. */
const ESCAPE_SEQUENCES = new RegExp(`${CSI}|${OSC}|${TWO_BYTE}`, 'g');

/**
 * A terminal's raw stream as text for the model: escape sequences (colours, cursor moves, the
 * shell's bracketed-paste toggles around its prompt) removed. Used for what was typed and echoed
 * (sends, reads), not for a `terminal/run`'s output, which is the command's own bytes.
 */
export function plainTerminalText(text: string): string {
  return text.includes('\x1b') ? text.replace(ESCAPE_SEQUENCES, '') : text;
}

/** The line that tells the model its shell state is gone. */
export const RESET_LINE =
  'The persistent bash shell was reset; the next bash call starts from the workspace with a fresh current directory and environment.';

/** The marker of a command that reads from the terminal. */
export const WAITING_FOR_INPUT_LINE =
  '[waiting for input: the command is reading from the terminal; the next bash call is typed into it]';

/** The marker of a command still running but silent for `idleMs`. */
export function stillRunningLine(idleMs: number): string {
  return `[still running: no output for ${idleMs}ms; the next bash call is typed into it]`;
}

/** The marker of a command left running at the harness's `yieldMs`. */
export function yieldedLine(yieldMs: number): string {
  return `[still running after ${yieldMs}ms; the next bash call is typed into it and shows what it printed since]`;
}

/** What ended a timed-out command when SIGINT alone did not: the signal and the command it went to. */
export interface StoppedWith {
  signal: string;
  command: string;
}

/**
 * The marker of a timeout after which the command gave the prompt back: interrupted by SIGINT, or
 * killed with the later signal that `stopped` names.
 */
export function interruptedTimeoutLine(timeoutMs: number, stopped?: StoppedWith): string {
  if (!stopped || stopped.signal === 'SIGINT')
    return `[timed out after ${timeoutMs}ms; interrupted, the shell kept its state]`;
  const what = stopped.command === '' ? 'the command' : stopped.command;
  return `[timed out after ${timeoutMs}ms; ${what} did not stop on SIGINT and was killed with ${stopped.signal}; the shell kept its state]`;
}

/** How a shell or terminal program ended. */
export interface ExitFacts {
  exitCode: number | null;
  signal: string | null;
  /** Why the daemon ended it, e.g. `daemon restarted while the terminal was open`. */
  detail?: string;
}

/** `[shell exited: code N]`, `[shell killed by signal: SIG]` or `[shell exited]`. */
export function shellExitedLine(facts: ExitFacts): string {
  if (facts.signal) return `[shell killed by signal: ${facts.signal}]`;
  if (facts.exitCode !== null) return `[shell exited: code ${facts.exitCode}]`;
  return '[shell exited]';
}

/**
 * The line of the first result from a fresh shell that replaced one which ended between calls (a
 * daemon restart, an idle close): without it the model would take `Z=` for its own export's value.
 */
export function shellReplacedLine(facts: ExitFacts): string {
  const why =
    facts.detail ??
    (facts.signal
      ? `killed by signal ${facts.signal}`
      : facts.exitCode !== null
        ? `exit code ${facts.exitCode}`
        : 'it ended');
  return `[new shell: the previous persistent bash ended (${why}); its working directory, exports and functions were lost]`;
}

/** How one persistent `bash` call ended. */
export type PersistentOutcome =
  | { state: 'completed'; exitCode: number | null }
  | { state: 'waiting_for_input' }
  | { state: 'idle'; idleMs: number }
  | { state: 'running'; yieldMs: number }
  | { state: 'timed_out'; timeoutMs: number; interrupted: boolean; stopped?: StoppedWith }
  | ({ state: 'exited' } & ExitFacts);

/** What a persistent `bash` result is rendered from. */
export interface PersistentRenderInput {
  /** What the command printed (the tail, when truncated). */
  output: string;
  truncated: boolean;
  /** The file holding the whole output, when it was cut. */
  spillPath?: string;
  outcome: PersistentOutcome;
  /** A line after the output, before the outcome's lines (the shell was replaced, see `shellReplacedLine`). */
  notice?: string;
}

/** The output, its truncation line, or `(no output)`. */
function body(output: string, truncated: boolean, spillPath: string | undefined): string {
  let text = output;
  if (truncated) text += `\n[output truncated; full output: ${spillPath ?? '(unavailable)'}]`;
  return text.length === 0 ? '(no output)' : text;
}

/** Renders one persistent `bash` call as the model reads it. */
export function renderPersistentResult(input: PersistentRenderInput): string {
  const output = body(input.output, input.truncated, input.spillPath);
  const text = input.notice === undefined ? output : appendLine(output, input.notice);
  const outcome = input.outcome;
  switch (outcome.state) {
    case 'completed':
      return appendExitMarker(text, { exitCode: outcome.exitCode, signal: null });
    case 'waiting_for_input':
      return appendLine(text, WAITING_FOR_INPUT_LINE);
    case 'idle':
      return appendLine(text, stillRunningLine(outcome.idleMs));
    case 'running':
      return appendLine(text, yieldedLine(outcome.yieldMs));
    case 'timed_out':
      return outcome.interrupted
        ? appendLine(text, interruptedTimeoutLine(outcome.timeoutMs, outcome.stopped))
        : appendLine(appendLine(text, timeoutLine(outcome.timeoutMs)), RESET_LINE);
    case 'exited':
      return appendLine(appendLine(text, shellExitedLine(outcome)), RESET_LINE);
  }
}

/** Why a terminal send stopped waiting (the readiness tiers of docs/terminals.md). */
export type Readiness =
  | { reason: 'prompt' }
  | { reason: 'stdin_read' }
  | { reason: 'inferred_idle'; idleMs: number }
  | { reason: 'timeout'; timeoutMs: number }
  | ({ reason: 'session_exit' } & ExitFacts);

/** `[terminal exited: code 0]`, `[terminal exited: killed by signal SIGKILL]`, or the daemon's detail. */
export function terminalExitedLine(facts: ExitFacts): string {
  const how = facts.signal
    ? `killed by signal ${facts.signal}`
    : facts.exitCode !== null
      ? `code ${facts.exitCode}`
      : (facts.detail ?? 'ended');
  const detail = facts.detail && (facts.signal || facts.exitCode !== null) ? ` (${facts.detail})` : '';
  return `[terminal exited: ${how}${detail}]`;
}

/** The readiness line of a terminal tool result. */
export function readinessLine(readiness: Readiness): string {
  switch (readiness.reason) {
    case 'prompt':
      return '[ready: prompt]';
    case 'stdin_read':
      return '[ready: waiting for input]';
    case 'inferred_idle':
      return `[not proven ready: no output for ${readiness.idleMs}ms]`;
    case 'timeout':
      return timeoutLine(readiness.timeoutMs);
    case 'session_exit':
      return terminalExitedLine(readiness);
  }
}

/** The line of a terminal result whose output was cut to its tail. */
export const TERMINAL_TRUNCATED_LINE =
  '[output truncated to its tail; terminal_read with view "screen" shows what the screen shows now]';

/** What a `terminal_send` result is rendered from. */
export interface TerminalSendRenderInput {
  output: string;
  truncated: boolean;
  readiness: Readiness;
  /** With readiness `prompt`: the exit status of the command line that ended, from the prompt marker. */
  exitCode?: number;
  /** What the terminal's resource limits did (a process the kernel killed, a refused fork). */
  limits?: LimitReport;
}

/**
 * Renders a `terminal_send`: the output (or `(no output)`), the truncation line, the limit lines,
 * the exit marker of a command line that ended at the prompt (as the persistent `bash` shows a
 * typed command's: none for 0), then the readiness line.
 */
export function renderTerminalSend(input: TerminalSendRenderInput): string {
  let text = input.truncated ? `${TERMINAL_TRUNCATED_LINE}\n${input.output}` : input.output;
  if (text.length === 0) text = '(no output)';
  for (const line of limitLines(input.limits ?? {})) text = appendLine(text, line);
  if (input.readiness.reason === 'prompt' && input.exitCode !== undefined)
    text = appendExitMarker(text, { exitCode: input.exitCode, signal: null });
  return appendLine(text, readinessLine(input.readiness));
}

/** The state of a terminal, as the snapshot tells it. */
export interface TerminalStateFacts extends ExitFacts {
  id: string;
  status: 'running' | 'exited';
  foreground?: { pgid: number; command: string };
  pid: number;
}

/** `[terminal term-1: running]`, `[terminal term-1: running python3]`, or its exit line. */
export function terminalStateLine(terminal: TerminalStateFacts): string {
  if (terminal.status === 'exited') return terminalExitedLine(terminal);
  const foreground =
    terminal.foreground && terminal.foreground.pgid !== terminal.pid ? ` ${terminal.foreground.command}` : '';
  return `[terminal ${terminal.id}: running${foreground}]`;
}

/** What a `terminal_read` result is rendered from. */
export interface TerminalReadRenderInput {
  view: 'stream' | 'screen';
  text: string;
  /** Bytes the reader missed because the scrollback no longer held them. */
  droppedBytes: number;
  terminal: TerminalStateFacts;
}

/** Renders a `terminal_read`: new output (or the screen), a dropped-bytes notice, the terminal's state. */
export function renderTerminalRead(input: TerminalReadRenderInput): string {
  let text = input.text;
  if (input.view === 'stream') {
    if (input.droppedBytes > 0)
      text = `[${input.droppedBytes} bytes of earlier output are no longer held by the terminal]\n${text}`;
    if (text.length === 0) text = '(no new output)';
  } else if (text.trim().length === 0) text = '(blank screen)';
  return appendLine(text, terminalStateLine(input.terminal));
}

/** The readiness tier of a send, with the figures its line names. */
export function readinessOf(result: TerminalSendResult, idleMs: number, timeoutMs: number | undefined): Readiness {
  switch (result.waitReason) {
    case 'inferred_idle':
      return { reason: 'inferred_idle', idleMs };
    case 'timeout':
      return { reason: 'timeout', timeoutMs: timeoutMs ?? 0 };
    case 'session_exit':
      return {
        reason: 'session_exit',
        exitCode: result.terminal.exitCode,
        signal: result.terminal.signal,
        detail: result.terminal.detail,
      };
    case 'prompt':
    case 'stdin_read':
      return { reason: result.waitReason };
    // Only a terminal/run with yieldMs answers it: the program still runs.
    case 'yielded':
      return { reason: 'inferred_idle', idleMs };
    // Only a terminal/run that typed nothing answers it: the terminal waits for whatever runs there.
    case 'not_at_prompt':
      return { reason: 'stdin_read' };
  }
}
