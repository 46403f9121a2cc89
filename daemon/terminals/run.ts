/**
 * `terminal/run` (docs/terminals.md), the persistent-shell command: the command is typed between two
 * markers carrying a fresh nonce, evaluated in the shell itself (so `cd` and `export` persist),
 * and the result is exactly what it printed between them with its exit status. Output that
 * contains an old marker or a raw OSC 133 cannot end it early: only this run's nonce counts.
 */
import { join } from 'node:path';
import type { CancellationToken } from 'vscode-jsonrpc';
import { clampTimeout, type Config } from '../../protocol/config.js';
import { ExecdError } from '../../protocol/errors.js';
import type { TerminalRunResult, TerminalRunState, TerminalWaitReason } from '../../protocol/terminal.js';
import { newNonce, runLine, type MarkerEvent } from './markers.js';
import { RunCapture } from './run-capture.js';
import { waitReady, waitsBefore, type WaitEnd } from './readiness.js';
import { checkSendable, DEFAULT_IDLE_MS } from './send.js';
import { signalForeground } from './signal.js';
import { stopForeground } from './stop-foreground.js';
import type { Terminal } from './terminal.js';

/** How long, after its end marker, a run waits for the prompt that follows it. */
const PROMPT_AFTER_END_MS = 1_000;

/** What a run needs besides its request. */
export interface RunContext {
  config: Config;
  spillDir: string;
  token: CancellationToken;
  /** Closes the terminal (a timed-out command the shell itself did not return from). */
  close: (reason: string) => Promise<unknown>;
}

/** What a run asks for. */
interface RunRequest {
  command: string;
  timeoutMs?: number;
  idleMs?: number;
  yieldMs?: number;
}

/** Runs one command in a shell terminal; the answer names the timeout that applied. */
export async function runInTerminal(
  terminal: Terminal,
  request: RunRequest,
  ctx: RunContext,
): Promise<TerminalRunResult | ExecdError> {
  const timeoutMs = clampTimeout(request.timeoutMs, ctx.config);
  const ran = await runCommand(terminal, request, timeoutMs, ctx);
  return ran instanceof ExecdError ? ran : { ...ran, timeoutMs };
}

/** `runInTerminal` with its timeout resolved. */
async function runCommand(
  terminal: Terminal,
  request: RunRequest,
  timeoutMs: number,
  ctx: RunContext,
): Promise<Omit<TerminalRunResult, 'timeoutMs'> | ExecdError> {
  // An ended terminal answers `exited` whatever it ran: one restored from a previous daemon's
  // journal has no marker secret left by which to tell it was a shell.
  if (!terminal.isShell && terminal.running) {
    return new ExecdError(
      'INVALID_PARAMS',
      `terminalId ${terminal.id} runs its own argv, not a shell: use terminal/send`,
    );
  }
  const { config } = ctx;
  const refused = checkSendable(terminal, request.command, config);
  if (refused) return refused;
  terminal.busy = true;
  terminal.lastActivity = Date.now();
  const nonce = newNonce();
  const capture = new RunCapture(
    config.maxOutputBytes,
    join(ctx.spillDir, `${terminal.id}-${nonce}.out`),
    config.maxSpillBytes,
  );
  let started = false;
  // Set synchronously at the end marker (or a prompt after the start): what follows is not the command's.
  let ended = false;
  const stopOutput = terminal.onOutput((bytes) => {
    if (started && !ended) capture.push(bytes);
  });
  // The prompt marker after the end marker often comes in the same read: noted here, not waited for.
  let promptAfterEnd = false;
  const stopMarkers = terminal.onMarker((marker, _offset, fromShell) => {
    // The command takes the foreground right after the start marker, so that one is taken as it
    // comes. An end or prompt marker seen while a program owned the foreground is not the shell's:
    // it ends nothing and the output after it is still the command's.
    if (marker.kind === 'start' && marker.nonce === nonce) started = true;
    else if (!fromShell) return;
    else if (ended && marker.kind === 'prompt') promptAfterEnd = true;
    else if (started && (marker.kind === 'prompt' || (marker.kind === 'end' && marker.nonce === nonce))) ended = true;
  });
  const settle = async (end: WaitEnd) => {
    if (end.reason === 'marker' && !promptAfterEnd) await awaitPrompt(terminal);
  };
  const ours = (marker: MarkerEvent) => marker.kind === 'end' && marker.nonce === nonce;
  const promptAfterStart = () => started;
  try {
    if (!terminal.running) return result(terminal, capture, 'exited', undefined, 'session_exit');
    // A run line typed into anything but the daemon's own shell at its prompt would be read by that
    // program, nonce and all, or run as another command by another shell.
    if (!terminal.waitsAtOwnPrompt()) return result(terminal, capture, 'not_at_prompt', undefined, 'not_at_prompt');
    // A blank line runs nothing in a shell: the answer is the status the last command left.
    if (request.command.trim() === '')
      return result(terminal, capture, 'completed', terminal.promptStatus ?? 0, 'prompt');
    const line = runLine(nonce, request.command, { bracketedPaste: terminal.bracketedPaste });
    terminal.holdEcho(nonce, request.command);
    const before = waitsBefore(terminal, line);
    // A yield that comes before the timeout ends the wait instead of it; the command goes on.
    const yields = request.yieldMs !== undefined && request.yieldMs < timeoutMs;
    const deadline = Date.now() + (yields ? request.yieldMs! : timeoutMs);
    terminal.write(line);
    // While the shell still reads a long line, its reads are not readiness.
    await terminal.inputWritten(timeoutMs);
    const end = await waitReady(terminal, {
      idleMs: request.idleMs ?? DEFAULT_IDLE_MS,
      timeoutMs: Math.max(0, deadline - Date.now()),
      before,
      token: ctx.token,
      markerEnds: ours,
      promptEnds: promptAfterStart,
    });
    const status = endStatus(end);
    if (status !== undefined) {
      await settle(end);
      return result(terminal, capture, 'completed', status, 'prompt');
    }
    switch (end.reason) {
      // Never the end of a wait: only a run that typed nothing answers it.
      case 'not_at_prompt':
      case 'stdin_read':
        return result(terminal, capture, 'waiting_for_input', undefined, 'stdin_read');
      case 'inferred_idle':
        return result(terminal, capture, 'idle', undefined, 'inferred_idle');
      // Never the end of a wait: the deadline of a yield ends it as `timeout` (below).
      case 'yielded':
        return result(terminal, capture, 'running', undefined, 'yielded');
      case 'session_exit':
        return result(terminal, capture, 'exited', undefined, 'session_exit');
      // A marker or prompt ending the wait carries its status and returned above.
      case 'marker':
      case 'prompt':
      case 'cancelled': {
        // Cancellation: interrupt the foreground, see whether the prompt comes back.
        signalForeground(terminal, 'SIGINT');
        const after = await waitReady(terminal, {
          idleMs: config.graceMs + 1,
          timeoutMs: config.graceMs,
          before: [],
          markerEnds: ours,
          promptEnds: promptAfterStart,
        });
        const back = endStatus(after);
        if (back !== undefined) await settle(after);
        return back === undefined
          ? result(terminal, capture, 'idle', undefined, 'inferred_idle')
          : result(terminal, capture, 'completed', back, 'prompt');
      }
      case 'timeout': {
        if (yields) return result(terminal, capture, 'running', undefined, 'yielded');
        // SIGINT, then TERM and KILL to the foreground group alone, until the prompt comes back.
        const stop = await stopForeground(terminal, config.graceMs, { markerEnds: ours, promptEnds: promptAfterStart });
        const back = stop?.back && endStatus(stop.back);
        if (stop && back !== undefined) {
          await settle(stop.back!);
          const stoppedWith = { signal: stop.signal, pgid: stop.pgid, command: stop.command };
          return { ...result(terminal, capture, 'timed_out', undefined, 'timeout'), interrupted: true, stoppedWith };
        }
        // Only the shell itself can keep the prompt away now (its own group holds the foreground).
        await ctx.close(`timed out after ${timeoutMs}ms and the shell did not return to its prompt`);
        return { ...result(terminal, capture, 'timed_out', undefined, 'timeout'), interrupted: false };
      }
    }
  } finally {
    terminal.releaseEcho(false);
    stopOutput();
    stopMarkers();
    terminal.busy = false;
  }
}

/** The exit status when the wait ended with the run's end marker or a prompt after its start. */
function endStatus(end: WaitEnd): number | undefined {
  if (end.reason === 'marker' && end.marker.kind === 'end') return end.marker.status;
  if (end.reason === 'prompt') return end.status;
  return undefined;
}

/** After the end marker the shell prints its prompt marker; waiting for it keeps it out of the next send. */
async function awaitPrompt(terminal: Terminal): Promise<void> {
  await waitReady(terminal, { idleMs: PROMPT_AFTER_END_MS, timeoutMs: PROMPT_AFTER_END_MS, before: [] });
}

function result(
  terminal: Terminal,
  capture: RunCapture,
  state: TerminalRunState,
  exitCode: number | undefined,
  waitReason: TerminalWaitReason,
): Omit<TerminalRunResult, 'timeoutMs'> {
  const output = capture.finish();
  return {
    output: output.text,
    ...(exitCode === undefined ? {} : { exitCode }),
    state,
    truncated: output.truncated,
    outputBytes: output.bytes,
    ...(output.spillPath ? { outputSpillPath: output.spillPath } : {}),
    ...(output.saveError === undefined ? {} : { saveError: output.saveError }),
    waitReason,
    cursor: terminal.scrollback.end,
    terminal: terminal.snapshot(),
  };
}
