/**
 * What the model reads (docs/library.md) — a byte-exact contract: stdout, the `[stderr]` section, then
 * the markers, with the exit marker always on the last line.
 */
import { formatBytes, type LimitReport } from '../protocol/limits.js';
import type { SandboxMode } from '../protocol/sandbox.js';
import type { CollectedOutput, JobReadResult, JobSnapshot, SandboxReport, ShellRunResult } from '../protocol/types.js';

const EXIT_CODE_MARKER = /\n\[exit code: (\d+)\]$/;
const SIGNAL_MARKER = /\n\[killed by signal: ([^\]\n]+)\]$/;

/** Options of `renderResult` and `renderProcessRead`. */
export interface RenderOptions {
  /** A line added after the sandbox denial marker when escalation is available. */
  escalationHint?: string;
}

/** The exit facts the markers are made of. */
type ExitFacts = Pick<ShellRunResult, 'exitCode' | 'signal'>;

/** The truncation line of a stream. */
export function truncationLine(output: CollectedOutput): string {
  return `[output truncated; full output: ${output.spillPath ?? '(unavailable)'}]`;
}

/** The sandbox denial marker. */
export function sandboxDeniedLine(mode: SandboxMode): string {
  return `[sandbox: file access denied under ${mode} mode]`;
}

/** The timeout marker. */
export function timeoutLine(timeoutMs: number): string {
  return `[timed out after ${timeoutMs}ms]`;
}

/** The line of a unit the kernel killed for want of memory: `[killed: out of memory (limit 512 MiB)]`. */
export function outOfMemoryLine(limitBytes: number | undefined): string {
  return limitBytes === undefined
    ? '[killed: out of memory]'
    : `[killed: out of memory (limit ${formatBytes(limitBytes)})]`;
}

/** The line of a unit whose fork its `pids` limit refused: `[limit: process count 32 reached]`. */
export function processLimitLine(pids: number): string {
  return `[limit: process count ${pids} reached]`;
}

/** The lines of what a unit's resource limits did, in order (none when they did nothing). */
export function limitLines(report: LimitReport): string[] {
  const lines: string[] = [];
  if (report.pidsLimitReached !== undefined) lines.push(processLimitLine(report.pidsLimitReached));
  if (report.oomKilled) lines.push(outOfMemoryLine(report.oomLimitBytes));
  return lines;
}

/** Appends the limit lines of a run or a settled job. */
function appendLimitLines(text: string, report: LimitReport): string {
  for (const line of limitLines(report)) text = appendLine(text, line);
  return text;
}

/** The exit marker of a run: a signal wins, exit code 0 has none. */
export function exitMarker(facts: ExitFacts): string | undefined {
  if (facts.signal) return `[killed by signal: ${facts.signal}]`;
  if (facts.exitCode !== null && facts.exitCode !== 0) return `[exit code: ${facts.exitCode}]`;
  return undefined;
}

/**
 * The line telling the model how to ask for wider file access after a denial; `targets` are the
 * escalation targets wider than the current mode.
 */
export function escalationHintLine(targets: readonly SandboxMode[]): string {
  return `[sandbox: to retry with wider file access, call again with sandbox_permissions (${targets.join(' or ')}) and a justification]`;
}

/** Appends `line` on a line of its own. */
export function appendLine(text: string, line: string): string {
  return text.length === 0 || text.endsWith('\n') ? text + line : `${text}\n${line}`;
}

/** True when the last line of `text` would be taken for an exit marker by `parseExitStatus`. */
function endsWithMarkerLookalike(text: string): boolean {
  const asParsed = `\n${text}`;
  return EXIT_CODE_MARKER.test(asParsed) || SIGNAL_MARKER.test(asParsed);
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

/** The line of a sandbox runner that failed before the command ran. */
export function runnerFailedLine(mode: SandboxMode): string {
  return `[sandbox: the ${mode} runner failed before the command ran]`;
}

/**
 * The sandbox lines of a run or job: the denial (and the hint), or a runner failure. A runner
 * failure replaces the denial: the runner's own error may mention `Read-only file system`, but no
 * command ran that a denial could have hit, and a wider mode would not help.
 */
function appendSandboxLines(text: string, sandbox: SandboxReport | undefined, options: RenderOptions): string {
  if (sandbox?.runnerFailed) return appendLine(text, runnerFailedLine(sandbox.mode));
  if (sandbox?.denied) {
    text = appendLine(text, sandboxDeniedLine(sandbox.mode));
    if (options.escalationHint) text = appendLine(text, options.escalationHint);
  }
  return text;
}

/**
 * Appends the exit marker; when there is none (exit 0) but the text's last line looks like one,
 * appends `[exit code: 0]` so that `parseExitStatus` consumes the renderer's line, not the command's.
 */
export function appendExitMarker(text: string, facts: ExitFacts): string {
  const marker = exitMarker(facts);
  if (marker) return appendLine(text, marker);
  if (endsWithMarkerLookalike(text)) return appendLine(text, `[exit code: ${facts.exitCode ?? 0}]`);
  return text;
}

/** The line of a run the daemon's shutdown killed: its state (a server it started, a half-done build) is gone. */
export const DAEMON_STOPPED_LINE = '[the execd daemon stopped during this command and killed it; run it again]';

/** Renders a foreground result as the model reads it. */
export function renderResult(result: ShellRunResult, options: RenderOptions = {}): string {
  let text = renderOutput(result.stdout, result.stderr);
  text = appendSandboxLines(text, result.sandbox, options);
  if (result.timedOut) text = appendLine(text, timeoutLine(result.timeoutMs));
  if (result.daemonStopped) text = appendLine(text, DAEMON_STOPPED_LINE);
  text = appendLimitLines(text, result);
  return appendExitMarker(text, result);
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

/** The notice of a lossy background read, naming the log files that hold everything. */
export function lossyLine(read: Pick<JobReadResult, 'stdoutSpillPath' | 'stderrSpillPath'>): string {
  const paths = [read.stdoutSpillPath, read.stderrSpillPath].filter((path): path is string => Boolean(path));
  return `[some output was dropped from memory; full output: ${paths.length > 0 ? paths.join(', ') : '(unavailable)'}]`;
}

/** The state line of a job: `[job bash-1: running]`, `[job bash-1: failed (spawn failed: …)]`. */
export function jobStateLine(job: Pick<JobSnapshot, 'id' | 'status' | 'detail'>): string {
  const detail = (job.status === 'failed' || job.status === 'lost') && job.detail ? ` (${job.detail})` : '';
  return `[job ${job.id}: ${job.status}${detail}]`;
}

/**
 * Renders a consuming background read (`job_output`): the new output (or `(no new output)`), the
 * lossy notice, the sandbox notices, the job's state, and — once it settled — its exit marker last.
 */
export function renderProcessRead(read: JobReadResult, options: RenderOptions = {}): string {
  let text = read.delta.length > 0 ? read.delta : '(no new output)';
  if (read.lossy) text = appendLine(text, lossyLine(read));
  text = appendSandboxLines(text, read.job.sandbox, options);
  const settled = read.job.status !== 'running' && read.job.status !== 'stopping';
  if (settled) text = appendLimitLines(text, read.job);
  text = appendLine(text, jobStateLine(read.job));
  const marker = settled ? exitMarker(read.job) : undefined;
  return marker ? appendLine(text, marker) : text;
}

/** The one-line notice of a settled background job, handed to the harness. */
export function renderJobExited(job: JobSnapshot): string {
  const detail = job.detail ? ` (${job.detail})` : '';
  return `background job ${job.id} ${job.status}${detail}: ${job.label}`;
}
