/**
 * `shell/run` with `yieldMs` (docs/reconnect.md). The command runs as a job of the session from its start,
 * held by the run: so when it still runs at `yieldMs` nothing has to move — the same process goes
 * on as that job, its log already holding the output so far, and the answer names it. A command
 * that ends sooner (or times out, or is cancelled) answers the usual run result and its job is
 * forgotten, so a fast command leaves no job behind.
 */
import { rmSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { MAX_TIMER_MS } from '../../protocol/config.js';
import { BACKGROUND_DISABLED_MESSAGE, ExecdError } from '../../protocol/errors.js';
import type { CollectedOutput, ShellRunResult, YieldedRunResult } from '../../protocol/types.js';
import { SHUTDOWN_ABORT } from '../runs/active-runs.js';
import type { DaemonContext } from '../context.js';
import type { Job } from '../jobs/job.js';
import { killJob } from '../jobs/job-control.js';
import type { JobStream } from '../jobs/job-streams.js';
import { decodeSlice } from '../jobs/stream-read.js';
import { startJobLaunch, type Launch } from '../runs/launch.js';

/** A run that may yield, as the `shell/run` handler resolved it. */
export interface YieldingRun {
  /** The run prepared (runs/launch.ts); its unit is kept when it yields. */
  launch: Launch;
  stdin: string | undefined;
  yieldMs: number;
  /** The caller's cancellation (its request, its connection, the session or the daemon ending). */
  signal: AbortSignal;
  /** Called with the run's job once it started (or failed to): what watches the daemon follows it. */
  onJob?: (job: Job) => void;
}

/** What ended the wait of a held job's run. */
type End = 'settled' | 'yield' | 'timeout' | 'abort';

/**
 * Runs a command that may yield. Refused up front when its session could not start a job
 * (background runs disabled, `maxJobsPerSession` reached): a yield must never fail halfway.
 */
export async function runYielding(
  daemon: DaemonContext,
  run: YieldingRun,
): Promise<ShellRunResult | YieldedRunResult | ExecdError> {
  const { spec, sessionId, config, unit } = run.launch;
  const refuse = (error: ExecdError) => {
    daemon.processes.scopes.release(sessionId, unit);
    return error;
  };
  if (!config.enableRunInBackground) {
    return refuse(new ExecdError('BACKGROUND_DISABLED', `yieldMs: ${BACKGROUND_DISABLED_MESSAGE}`));
  }
  if (daemon.jobs.live(sessionId).length >= config.maxJobsPerSession) {
    return refuse(
      new ExecdError(
        'LIMIT_EXCEEDED',
        `yieldMs: maxJobsPerSession limit reached (${config.maxJobsPerSession}); a run that may yield needs a free job`,
      ),
    );
  }
  const started = performance.now();
  const job = await startJobLaunch(daemon, run.launch, { stdin: run.stdin, held: true });
  run.onJob?.(job);
  const end = await firstEnd(job, run.yieldMs, spec.timeoutMs, run.signal);
  if (end === 'yield' && job.isLive) {
    job.held = false;
    const stdout = outputSoFar(job.streams.stdout, spec.stdoutMaxBytes, false);
    const stderr = outputSoFar(job.streams.stderr, config.maxOutputBytes, false);
    // The caller has the output so far: the job's reader goes on after it, nothing is read twice.
    job.cursor = { stdout: stdout.nextOffset, stderr: stderr.nextOffset };
    daemon.jobs.recordCursor(job);
    daemon.log.info({ jobId: job.id, sessionId, pid: job.pid }, 'run yielded to a job');
    return {
      yielded: true,
      jobId: job.id,
      pid: job.pid,
      startedAt: job.identity.startedAt.toISOString(),
      durationMs: Math.round(performance.now() - started),
      stdout: stdout.output,
      stderr: stderr.output,
      ...(job.sandbox && { sandbox: job.sandbox }),
    };
  }
  if (end === 'timeout' || end === 'abort') await killJob(job, config.graceMs);
  await job.settled;
  try {
    return settledResult(job, end, run, Math.round(performance.now() - started), config.maxOutputBytes);
  } finally {
    daemon.jobs.forget(job);
  }
}

/** Resolves with whichever comes first; every timer and listener is released when it does. */
function firstEnd(job: Job, yieldMs: number, timeoutMs: number, signal: AbortSignal): Promise<End> {
  if (job.isSettled) return Promise.resolve('settled');
  if (signal.aborted) return Promise.resolve('abort');
  return new Promise((resolve) => {
    // The run's own timeout still holds until it yields; a job has none after.
    const timeoutFirst = timeoutMs <= yieldMs;
    const timer = setTimeout(
      () => finish(timeoutFirst ? 'timeout' : 'yield'),
      Math.min(timeoutMs, yieldMs, MAX_TIMER_MS),
    );
    const onAbort = () => finish('abort');
    signal.addEventListener('abort', onAbort, { once: true });
    const settled = () => finish('settled');
    job.settled.then(settled, settled);
    function finish(end: End) {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      resolve(end);
    }
  });
}

/**
 * The last `maxBytes` of a stream as a run answers them, and the offset after them. The log path
 * is named only when the text is not the whole stream, as a run names its spill file.
 */
function outputSoFar(
  stream: JobStream,
  maxBytes: number,
  complete: boolean,
): { output: CollectedOutput; nextOffset: number } {
  const from = Math.max(0, stream.totalBytes - maxBytes);
  const slice = stream.pageFrom(from, maxBytes);
  const text = decodeSlice({ ...slice, lossy: slice.lossy || slice.offset > 0 }, complete);
  const truncated = text.offset > 0;
  const output: CollectedOutput = { text: text.text, truncated };
  if (truncated && stream.logPath !== undefined) output.spillPath = stream.logPath;
  return { output, nextOffset: text.nextOffset };
}

/**
 * The usual run result of a held job that settled before it yielded. Its log files go unless
 * the answer names them (the text is not the whole stream), as a run keeps only what spilled.
 */
function settledResult(
  job: Job,
  end: End,
  run: YieldingRun,
  durationMs: number,
  maxOutputBytes: number,
): ShellRunResult | ExecdError {
  if (job.status === 'failed') {
    const detail = job.detail ?? 'the command did not start';
    return new ExecdError(job.sandbox?.runnerFailed ? 'SANDBOX_UNAVAILABLE' : 'SPAWN_FAILED', detail);
  }
  const stdout = outputSoFar(job.streams.stdout, run.launch.spec.stdoutMaxBytes, true).output;
  const stderr = outputSoFar(job.streams.stderr, maxOutputBytes, true).output;
  for (const [output, path] of [
    [stdout, job.identity.logPaths.stdout],
    [stderr, job.identity.logPaths.stderr],
  ] as const) {
    if (output.spillPath !== undefined) continue;
    try {
      rmSync(path, { force: true });
    } catch {
      // A log left behind is swept with the session's directory.
    }
  }
  return {
    exitCode: job.exitCode,
    signal: job.signal,
    timedOut: end === 'timeout',
    aborted: end === 'abort',
    ...(end === 'abort' && run.signal.reason === SHUTDOWN_ABORT && { daemonStopped: true as const }),
    timeoutMs: run.launch.spec.timeoutMs,
    durationMs,
    pid: job.pid,
    stdout,
    stderr,
    ...(job.sandbox && { sandbox: job.sandbox }),
    ...job.limitReport,
  };
}
