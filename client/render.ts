/**
 * What the model reads (SPEC §3.4) — a byte-exact contract: stdout, the `[stderr]` section, then
 * the markers, with the exit marker always on the last line.
 */
import type { CollectedOutput, ShellRunResult } from '../protocol/types.js';

const EXIT_CODE_MARKER = /\n\[exit code: (\d+)\]$/;
const SIGNAL_MARKER = /\n\[killed by signal: ([^\]\n]+)\]$/;

/** Options of `renderResult`. */
export interface RenderOptions {
  /** A line added after the sandbox denial marker when escalation is available. */
  escalationHint?: string;
}

/** The truncation line of a stream. */
export function truncationLine(output: CollectedOutput): string {
  return `[output truncated; full output: ${output.spillPath ?? '(unavailable)'}]`;
}

/** Appends `line` on a line of its own. */
function appendLine(text: string, line: string): string {
  return text.length === 0 || text.endsWith('\n') ? text + line : `${text}\n${line}`;
}

/** The body: stdout, then the `[stderr]` section, or `(no output)`. */
export function renderOutput(stdout: CollectedOutput, stderr: CollectedOutput): string {
  let text = stdout.text;
  if (stdout.truncated) text += `\n${truncationLine(stdout)}`;
  if (stderr.text.length > 0 || stderr.truncated) {
    text = appendLine(text, `[stderr]\n${stderr.text}`);
    if (stderr.truncated) text += `\n${truncationLine(stderr)}`;
  }
  return text.length === 0 ? '(no output)' : text;
}

/** Renders a foreground result as the model reads it. */
export function renderResult(result: ShellRunResult, options: RenderOptions = {}): string {
  let text = renderOutput(result.stdout, result.stderr);
  if (result.sandbox?.denied) {
    text = appendLine(text, `[sandbox: file access denied under ${result.sandbox.mode} mode]`);
    if (options.escalationHint) text = appendLine(text, options.escalationHint);
  }
  if (result.timedOut) text = appendLine(text, `[timed out after ${result.timeoutMs}ms]`);
  if (result.signal) return appendLine(text, `[killed by signal: ${result.signal}]`);
  if (result.exitCode !== null && result.exitCode !== 0) return appendLine(text, `[exit code: ${result.exitCode}]`);
  // The command's own last line looks like a marker: add the real one, so the parse takes ours.
  if (EXIT_CODE_MARKER.test(`\n${text}`) || SIGNAL_MARKER.test(`\n${text}`)) {
    return appendLine(text, `[exit code: ${result.exitCode ?? 0}]`);
  }
  return text;
}

/** The exit status recovered from a rendered result, and the body without its marker. */
export type ParsedExitStatus = { body: string; exitCode: number } | { body: string; signal: string };

/** Splits the trailing exit marker off a rendered result; no marker means exit code 0. */
export function parseExitStatus(text: string): ParsedExitStatus {
  const signal = SIGNAL_MARKER.exec(text);
  if (signal) return { body: text.slice(0, signal.index), signal: signal[1]! };
  const exit = EXIT_CODE_MARKER.exec(text);
  if (exit) return { body: text.slice(0, exit.index), exitCode: Number(exit[1]) };
  return { body: text, exitCode: 0 };
}
