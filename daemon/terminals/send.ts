/**
 * `terminal/send` (docs/terminals.md): write text (and Enter with `submit`), then wait for the first
 * readiness tier; the result is what the terminal printed since the write, bounded.
 */
import type { CancellationToken } from 'vscode-jsonrpc';
import { clampTimeout, type Config } from '../../protocol/config.js';
import { ExecdError } from '../../protocol/errors.js';
import type { TerminalSendResult, TerminalWaitReason } from '../../protocol/terminal.js';
import { boundedTail } from './output.js';
import { waitReady, waitsBefore } from './readiness.js';
import { signalForeground } from './signal.js';
import type { Terminal } from './terminal.js';

/** Default silence after which a send reports `inferred_idle`. */
export const DEFAULT_IDLE_MS = 3_000;

/** What a send asks for. */
export interface SendRequest {
  text: string;
  submit?: boolean;
  idleMs?: number;
  timeoutMs?: number;
}

/**
 * LIMIT_EXCEEDED when `bytes` more input would pass `maxTerminalInputBytes`, counting what still
 * waits for the program to read it: a terminal is typed into, a pasted script fits, a file does not.
 */
export function checkInputSize(
  terminal: Terminal,
  bytes: number,
  config: Config,
  what: string,
): ExecdError | undefined {
  const limit = config.maxTerminalInputBytes;
  if (bytes > limit) return new ExecdError('LIMIT_EXCEEDED', `${what} is larger than maxTerminalInputBytes (${limit})`);
  if (bytes + terminal.inputPending > limit) {
    return new ExecdError(
      'LIMIT_EXCEEDED',
      `terminal ${terminal.id} has ${terminal.inputPending} bytes of input its program has not read yet; ${what} would pass maxTerminalInputBytes (${limit})`,
    );
  }
  return undefined;
}

/** TERMINAL_BUSY while another send or run is in flight; LIMIT_EXCEEDED for text past `maxTerminalInputBytes`. */
export function checkSendable(terminal: Terminal, text: string, config: Config): ExecdError | undefined {
  if (terminal.busy) {
    return new ExecdError(
      'TERMINAL_BUSY',
      `terminal ${terminal.id} is busy with another send or run; wait for it or use terminal/write`,
    );
  }
  return checkInputSize(terminal, Buffer.byteLength(text), config, 'text');
}

/** Sends text and waits for readiness; a cancelled send interrupts the foreground and answers with what was read. */
export async function sendToTerminal(
  terminal: Terminal,
  request: SendRequest,
  config: Config,
  token: CancellationToken,
): Promise<TerminalSendResult | ExecdError> {
  const refused = checkSendable(terminal, request.text, config);
  if (refused) return refused;
  const timeoutMs = clampTimeout(request.timeoutMs, config);
  terminal.busy = true;
  terminal.lastActivity = Date.now();
  try {
    // A prompt that a signal brings back (terminal/signal SIGINT to a command) would end this send
    // before its text ran: wait for it first, at most PROMPT_AFTER_SIGNAL_MS (less when the
    // program goes on waiting for input instead).
    const due = terminal.promptDueUntil - Date.now();
    if (due > 0 && terminal.running) await waitReady(terminal, { idleMs: due, timeoutMs: due, before: [] });
    const start = terminal.scrollback.end;
    let reason: TerminalWaitReason;
    // The status of the prompt marker that ended the wait.
    let status: number | undefined;
    if (!terminal.running) reason = 'session_exit';
    // Nothing to type and the shell already waits at its prompt (the command ended before this
    // poll): waiting for a prompt marker that already came would only end at idleMs.
    else if (request.text === '' && !request.submit && terminal.waitsAtOwnPrompt()) {
      reason = 'prompt';
      status = terminal.promptStatus;
    } else {
      const input = request.text + (request.submit ? '\r' : '');
      const before = waitsBefore(terminal, input);
      const deadline = Date.now() + timeoutMs;
      terminal.write(input);
      // While the program still reads the input, its reads are not readiness.
      await terminal.inputWritten(timeoutMs);
      const end = await waitReady(terminal, {
        idleMs: request.idleMs ?? DEFAULT_IDLE_MS,
        timeoutMs: Math.max(0, deadline - Date.now()),
        before,
        token,
      });
      if (end.reason === 'cancelled') {
        signalForeground(terminal, 'SIGINT');
        const after = await waitReady(terminal, { idleMs: config.graceMs, timeoutMs: config.graceMs, before: [] });
        reason = after.reason === 'prompt' || after.reason === 'session_exit' ? after.reason : 'timeout';
        if (after.reason === 'prompt') status = after.status;
      } else if (end.reason === 'marker') reason = 'prompt';
      else {
        reason = end.reason;
        if (end.reason === 'prompt') status = end.status;
      }
    }
    const { bytes, offset } = terminal.scrollback.rawFrom(start);
    const output = boundedTail(bytes, config.maxOutputBytes);
    return {
      output: output.text,
      waitReason: reason,
      ...(reason === 'prompt' && status !== undefined ? { exitCode: status } : {}),
      cursor: offset + bytes.length,
      truncated: output.truncated || offset > start,
      timeoutMs,
      terminal: terminal.snapshot(),
    };
  } finally {
    terminal.busy = false;
  }
}
