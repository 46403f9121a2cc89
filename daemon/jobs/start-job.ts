/**
 * Starting a background job: the same `bash -c` spawn as a foreground run, no timeout, both
 * streams logged from byte 0 (written by the process straight into its log files; stderr through
 * a pipe when a sandbox runner's stderr is scanned), and a watcher that settles the job when its
 * process ends. A job whose streams both go to files needs no daemon to write them: it can
 * outlive a `daemon/shutdown { keepJobs }` (docs/reconnect.md).
 */
import { join } from 'node:path';
import { once } from 'node:events';
import type { Config } from '../../protocol/config.js';
import type { CollectedOutput, ExecSpec } from '../../protocol/types.js';
import { pipeDetacher, type ReadPipe } from './job-pipes.js';
import { OutputCollector } from '../../spill/collector.js';
import { FileCapture, openFileCapture } from '../../spill/file-capture.js';
import { failureText } from '../../spill/spill-file.js';
import { drainAfterExit } from '../executor/drain.js';
import { groupAlive } from '../processes/group-signals.js';
import { terminate, terminateGroup, unitParts } from '../processes/terminate.js';
import { HAS_PROC, readProcStat } from '../../shared/proc.js';
import { checkWorkdir, spawned, spawnShell, type ShellProcess } from '../executor/spawn.js';
import { JOB_DESCRIPTOR_RESERVE, type Spawner } from '../executor/spawner.js';
import type { Logger } from '../log/logger.js';
import type { ProcessRegistry, TrackedGroup } from '../processes/process-registry.js';
import { Job } from './job.js';
import { JobStdin } from './job-stdin.js';
import { CapturedFileStream, CollectedStream, LogFileStream, TailBytesStream, type JobStream } from './job-streams.js';
import type { JobTable } from './job-table.js';
import type { JobLaunchPlan } from './launch-plan.js';
import type { JobOutcome } from './settlement.js';
import { lostMountRace, RunnerMessageHold, RUNNER_STARTS, sendThrough } from '../sandbox/runner-failure.js';

/** What starting a job needs besides its spec and plan. */
export interface StartJobContext {
  table: JobTable;
  processes: ProcessRegistry;
  spawner: Spawner;
  /** The configuration as of this start. */
  config: Config;
  /** The owner session's log directory, `<stateDir>/spill/<sessionId>`. */
  logDir: string;
  log: Logger;
  stdin?: string;
  /** Keep the job's stdin open for `job/write` (docs/jobs.md); `stdin`, if any, is written first. */
  keepStdinOpen?: boolean;
  /** The job's unit in its session's process scope (process-scopes.ts): its escaped processes are found there. */
  unit?: string;
  /** The job of a `shell/run` with `yieldMs`: held by its run until it yields (see `Job.held`). */
  held?: boolean;
  /** The key of a keyed `shell/start` and its params' fingerprint, journaled with the job. */
  requestKey?: { key: string; fingerprint: string };
}

/** Where a running job's output goes: straight into its log files, or (scanned, no room) through a pipe. */
interface Capture {
  stdout: FileCapture | OutputCollector;
  stderr: FileCapture | OutputCollector;
}

/**
 * Opens a job's captures. Never throws: when the stdout log cannot be a file the child writes
 * itself (no descriptor or inode left, a nearly full disk), stdout goes through a pipe like stderr,
 * and a log file that cannot be written keeps only the tail in memory (its `saveError` says why).
 */
function openCapture(
  logPaths: Record<'stdout' | 'stderr', string>,
  config: Config,
  pipeStderr: boolean,
  pipeStdout: boolean,
): Capture {
  const limits = { maxBytes: config.maxOutputBytes, maxSpillBytes: config.maxSpillBytes };
  const collector = (path: string) => new OutputCollector({ ...limits, spillPath: path, alwaysToFile: true });
  const file = (path: string) => {
    const capture = openFileCapture({ ...limits, path, keepFile: true });
    return capture instanceof FileCapture ? capture : collector(path);
  };
  return {
    stdout: pipeStdout ? collector(logPaths.stdout) : file(logPaths.stdout),
    stderr: pipeStderr ? collector(logPaths.stderr) : file(logPaths.stderr),
  };
}

/** The descriptors of a capture the child writes itself, by stream. */
function captureFiles(capture: Capture): Partial<Record<'stdout' | 'stderr', FileCapture['target']>> {
  return {
    ...(capture.stdout instanceof FileCapture && { stdout: capture.stdout.target }),
    ...(capture.stderr instanceof FileCapture && { stderr: capture.stderr.target }),
  };
}

/** The readable stream of a running job's capture. */
function liveStream(capture: FileCapture | OutputCollector, windowBytes: number): JobStream {
  return capture instanceof FileCapture ? new CapturedFileStream(capture, windowBytes) : new CollectedStream(capture);
}

/**
 * Creates the job and spawns its process. Resolves once the process runs (its pid is known) or
 * starting it failed, in which case the job is already settled `failed`.
 *
 * Transactional: from the moment the job is in the table, any failure (a refused argument, the
 * journal that cannot be written, …) settles it `failed` with a detail naming the cause and kills
 * a process already spawned, so no job stays `running` without a process or a watcher.
 */
export async function startJob(
  spec: ExecSpec,
  plan: JobLaunchPlan,
  sessionId: string,
  ctx: StartJobContext,
): Promise<Job> {
  const { config, table } = ctx;
  const id = table.allocateId();
  const logPaths = { stdout: join(ctx.logDir, `${id}.stdout`), stderr: join(ctx.logDir, `${id}.stderr`) };
  // A sandbox runner's stderr is scanned for denials and its failure: that needs the pipe.
  // A confined spawner cannot open log files (they are in the hidden state dir): both are pipes.
  const capture = openCapture(
    logPaths,
    config,
    plan.onStderr !== undefined || plan.runnerFailure !== undefined,
    plan.spawner !== undefined,
  );
  const job = new Job(
    { id, label: spec.command, ownerSession: sessionId, startedAt: new Date(), logPaths },
    {
      stdout: liveStream(capture.stdout, config.maxOutputBytes),
      stderr: liveStream(capture.stderr, config.maxOutputBytes),
    },
  );
  job.sandbox = plan.sandbox;
  job.keptStdinOpen = ctx.keepStdinOpen === true;
  job.held = ctx.held === true;
  job.requestKey = ctx.requestKey;
  let child: ShellProcess | undefined;
  let group: TrackedGroup | undefined;
  try {
    table.add(job);
    const failEarly = (outcome: JobOutcome) => {
      finishCapture(job, capture, config.maxOutputBytes);
      job.settle(outcome);
      return job;
    };
    if (plan.refused !== undefined) return failEarly({ kind: 'runner-failed', reason: plan.refused });
    const missing = checkWorkdir(spec.workdir);
    if (missing) return failEarly({ kind: 'spawn-failed', reason: missing.message });
    let stdin: JobStdin | undefined;
    try {
      if (ctx.keepStdinOpen) stdin = await JobStdin.create(join(ctx.logDir, `${id}.stdin`), table.stdinPool);
    } catch (error) {
      return failEarly({ kind: 'spawn-failed', reason: `cannot open a stdin pipe: ${failureText(error)}` });
    }
    child = spawnJobProcess(spec, plan, sessionId, capture, ctx, stdin);
    const failure = await spawned(child, plan.argv[0]!);
    stdin?.spawned();
    if (failure) {
      stdin?.close();
      // A confined spawner killed before it answered may have started the command: its unit goes.
      if (plan.spawner && ctx.unit !== undefined) await ctx.processes.scopes.kill(sessionId, ctx.unit, 0);
      return failEarly({ kind: plan.runnerFailure ? 'runner-failed' : 'spawn-failed', reason: failure.message });
    }
    if (stdin) {
      const opened = stdin;
      job.stdin = opened;
      const unbounded = { maxQueuedBytes: Number.MAX_SAFE_INTEGER, maxTotalQueuedBytes: Number.MAX_SAFE_INTEGER };
      // The request's own `stdin` was already held to maxStdinBytes.
      if (ctx.stdin !== undefined) opened.write(id, ctx.stdin, false, unbounded);
      // `settled` never rejects; closing the pipe cannot throw.
      job.settled.then(() => opened.close()).catch(() => undefined);
    }

    job.pid = child.pid!;
    group = ctx.processes.track({ pgid: job.pid, sessionId, kind: 'job' });
    if (HAS_PROC) job.procStartTime = readProcStat(job.pid)?.startTime;
    table.record(job);
    ctx.log.info({ jobId: id, sessionId, pid: job.pid }, 'job started');
  } catch (error) {
    // Nothing watches the process yet: kill it, close the captures, settle the job failed.
    ctx.log.error({ jobId: id, sessionId, err: failureText(error) }, 'job start failed');
    const pid = child?.pid;
    if (pid !== undefined) group ??= ctx.processes.track({ pgid: pid, sessionId, kind: 'job' });
    child?.stdout?.destroy();
    child?.stderr?.destroy();
    await abandonJob(job, capture, group, { kind: 'start-failed', reason: failureText(error) }, ctx);
    return job;
  }
  const watched = { child, group };
  // A runner that lost a mount race is started again, unless its FIFO stdin is gone (docs/sandbox.md).
  const restart: Restart | undefined =
    plan.runnerFailure && !ctx.keepStdinOpen
      ? { spawn: () => spawnJobProcess(spec, plan, sessionId, capture, ctx, undefined), startsLeft: RUNNER_STARTS - 1 }
      : undefined;
  // The chain ends in abandonJob, which never rejects.
  watchJob(job, watched, capture, plan, ctx, restart).catch((error: unknown) =>
    abandonJob(job, capture, watched.group, { kind: 'watch-failed', reason: failureText(error) }, ctx),
  );
  return job;
}

/** How to start a job's process again, and how many more times. */
interface Restart {
  spawn: () => ShellProcess;
  startsLeft: number;
}

/** Spawns a job's process: the plan's argv, its captures' files, the unit's cgroup. */
function spawnJobProcess(
  spec: ExecSpec,
  plan: JobLaunchPlan,
  sessionId: string,
  capture: Capture,
  ctx: StartJobContext,
  stdin: JobStdin | undefined,
): ShellProcess {
  return spawnShell(
    plan.spawner ?? ctx.spawner,
    plan.env ? { ...spec, env: plan.env } : spec,
    stdin ? undefined : ctx.stdin,
    plan.argv,
    captureFiles(capture),
    stdin?.path,
    JOB_DESCRIPTOR_RESERVE,
    ctx.unit === undefined ? undefined : ctx.processes.scopes.target(sessionId, ctx.unit),
  );
}

/**
 * Ends a job that failed to start or to be followed: its process group (if one was spawned) is
 * killed and awaited, its capture closed, and the job settled with `outcome`. Never throws.
 */
async function abandonJob(
  job: Job,
  capture: Capture,
  group: TrackedGroup | undefined,
  outcome: JobOutcome,
  ctx: StartJobContext,
): Promise<void> {
  if (group) {
    await terminateGroup(group.pgid, 0);
    ctx.processes.untrack(group);
  }
  try {
    finishCapture(job, capture, ctx.config.maxOutputBytes);
  } catch {
    // Reads fall back to what the streams held; the settlement below is what matters.
  }
  job.settle(outcome);
}

/**
 * Follows the process to its end and settles the job; with `restart`, a runner that lost a mount
 * race is started again under the same job (`watched` then names the new process and group).
 */
async function watchJob(
  job: Job,
  watched: { child: ShellProcess; group: TrackedGroup },
  capture: Capture,
  plan: JobLaunchPlan,
  ctx: StartJobContext,
  restart: Restart | undefined,
): Promise<void> {
  const { child, group } = watched;
  const pid = job.pid;
  let killing: Promise<void> | undefined;
  let noteKill: () => void = () => {};
  const killRequested = new Promise<void>((resolve) => (noteKill = resolve));
  const { scopes } = ctx.processes;
  const { unit } = ctx;
  const sessionId = job.identity.ownerSession;
  // What of the job left its group (`setsid`, a double fork): killed with it, by its unit.
  const killEscaped = (graceMs: number) =>
    unit === undefined
      ? Promise.resolve(0)
      : scopes.kill(sessionId, unit, graceMs, { spare: (member) => member.pgrp === pid });
  job.killTree = (graceMs) => {
    killing ??= terminate(unitParts(scopes, pid, sessionId, unit, plan.terminate), graceMs).then(() => {});
    noteKill();
    return killing;
  };
  // A kill that came while the process was being spawned.
  if (job.killRequested) {
    job
      .killTree(ctx.config.graceMs)
      .catch((error: unknown) => ctx.log.error({ jobId: job.id, pgid: pid, err: failureText(error) }, 'kill failed'));
  }

  // Collectors never throw (a log file that cannot be written is noted), so these listeners cannot.
  const { stdout, stderr: stderrCapture } = capture;
  // While the job may still be started again, what may be its runner's failure waits out of its log.
  const hold = restart && restart.startsLeft > 0 ? new RunnerMessageHold() : undefined;
  if (stdout instanceof OutputCollector) {
    child.stdout!.on('data', (chunk: Buffer) => {
      hold?.release();
      stdout.write(chunk);
    });
  }
  const stderrSink =
    stderrCapture instanceof OutputCollector
      ? (chunk: Buffer) => {
          stderrCapture.write(chunk);
          plan.onStderr?.(chunk);
        }
      : undefined;
  if (stderrSink) {
    child.stderr!.on('data', (chunk: Buffer) => {
      hold?.see(chunk);
      sendThrough(hold, () => stderrSink(chunk));
    });
  }
  // An upgrade in place hands these pipes to the next program instead of killing the job.
  const pipes: ReadPipe[] = [];
  if (stdout instanceof OutputCollector && child.stdout)
    pipes.push({ stream: 'stdout', pipe: child.stdout, sink: (chunk) => stdout.write(chunk) });
  if (stderrSink && child.stderr) pipes.push({ stream: 'stderr', pipe: child.stderr, sink: stderrSink });
  if (pipes.length > 0) {
    const detach = pipeDetacher(pipes);
    job.detachPipes = () => {
      hold?.release();
      return detach();
    };
  }
  const [rawExitCode, rawSignal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  job.detachPipes = undefined;
  if (child.lost !== undefined) {
    // Its exit cannot be observed: the group was killed, and the job failed rather than ended.
    await terminateGroup(pid, 0);
    child.stdout?.destroy();
    child.stderr?.destroy();
    ctx.processes.untrack(group);
    finishCapture(job, capture, ctx.config.maxOutputBytes);
    job.settle({ kind: 'lost', reason: child.lost });
    return;
  }
  const exit = { exitCode: rawExitCode, signal: rawSignal as string | null };
  const { exitCode, signal } = plan.exitFacts ? plan.exitFacts(exit, killing !== undefined) : exit;

  await drainAfterExit(
    {
      stdout: child.stdout,
      stderr: child.stderr,
      captureFds: Object.values(captureFiles(capture)).map((target) => target.fd),
    },
    pid,
    ctx.config.graceMs,
    killRequested.then(() => killing),
  );
  if (killing) await killing;
  child.stdout?.destroy();
  child.stderr?.destroy();
  const leftover = !killing && groupAlive(pid);
  if (leftover) group.kind = 'leftover';
  else ctx.processes.untrack(group);
  if (hold && restart && !leftover && !killing && !job.killRequested) {
    const held = hold.heldText();
    const reason =
      held === undefined
        ? undefined
        : plan.runnerFailure?.({
            exitCode,
            stdoutBytes: capture.stdout.totalBytes,
            stderr: held,
            stderrTruncated: false,
          });
    if (reason !== undefined && lostMountRace(reason)) {
      hold.drop();
      ctx.log.info({ jobId: job.id, pid }, 'job runner lost a mount race; starting it again');
      return restartJob(job, watched, capture, plan, ctx, restart);
    }
  }
  hold?.release();

  const { stdoutBytes, stderr, outputNote } = finishCapture(
    job,
    capture,
    ctx.config.maxOutputBytes,
    leftover ? () => groupAlive(pid) : undefined,
  );
  const runnerFailed = plan.runnerFailure?.({
    exitCode,
    stdoutBytes,
    stderr: stderr.text,
    stderrTruncated: stderr.truncated,
  });
  // Read before the settlement is announced, and before the unit's cgroup goes.
  if (unit !== undefined) job.limitReport = scopes.limitReport(sessionId, unit);
  if (runnerFailed !== undefined) job.settle({ kind: 'runner-failed', reason: runnerFailed });
  else job.settle({ kind: 'exit', exitCode, signal, killRequested: job.killRequested, outputNote });
  if (unit !== undefined) scopes.release(sessionId, unit);
  // `job/kill` of a settled job ends what it left behind: its group's leftovers, its escaped processes.
  job.killLeftovers = async (graceMs) => {
    const [inGroup, escaped] = await Promise.all([
      leftover && ctx.processes.terminate(group, graceMs),
      killEscaped(graceMs),
    ]);
    if (unit !== undefined) scopes.release(sessionId, unit);
    return inGroup || escaped > 0;
  };
}

/**
 * A settled job's output no longer changes: reads go to its log files through a window of the same
 * size, and the memory and descriptors go with the process. A stream whose file passed the cap, or
 * could not be written, keeps its tail. A leftover descendant that may still write stdout
 * (`writersAlive`) cannot grow the answered log. `outputNote` names a log that could not be saved.
 */
function finishCapture(job: Job, capture: Capture, windowBytes: number, writersAlive?: () => boolean) {
  const stdout = finishStream(job, 'stdout', capture.stdout, windowBytes, writersAlive);
  const stdoutBytes = capture.stdout.totalBytes;
  const stderr = finishStream(job, 'stderr', capture.stderr, windowBytes, writersAlive);
  const notes = [
    ...(stdout.saveError === undefined ? [] : [`stdout: ${stdout.saveError}`]),
    ...(stderr.saveError === undefined ? [] : [`stderr: ${stderr.saveError}`]),
  ];
  return { stdoutBytes, stderr, outputNote: notes.length > 0 ? notes.join('; ') : undefined };
}

/** Ends a stream: read from its log file from now on, or from memory when there is none. */
function finishStream(
  job: Job,
  name: 'stdout' | 'stderr',
  capture: FileCapture | OutputCollector,
  windowBytes: number,
  writersAlive: (() => boolean) | undefined,
): CollectedOutput {
  if (capture instanceof OutputCollector) return finishCollected(job, name, capture, windowBytes);
  const output = capture.finish(writersAlive);
  job.streams[name] =
    output.spillPath === undefined
      ? new TailBytesStream(capture.answeredTail!, capture.totalBytes)
      : new LogFileStream(output.spillPath, capture.totalBytes, windowBytes);
  return output;
}

/** Ends a piped stream: read from its log file from now on, or from memory when there is none. */
function finishCollected(
  job: Job,
  name: 'stdout' | 'stderr',
  collector: OutputCollector,
  windowBytes: number,
): CollectedOutput {
  const output = collector.finish();
  const { spillPath, totalBytes } = collector;
  if (spillPath !== undefined) job.streams[name] = new LogFileStream(spillPath, totalBytes, windowBytes);
  return output;
}

/** Starts a job's process again after its runner lost a mount race, and follows the new one. */
async function restartJob(
  job: Job,
  watched: { child: ShellProcess; group: TrackedGroup },
  capture: Capture,
  plan: JobLaunchPlan,
  ctx: StartJobContext,
  restart: Restart,
): Promise<void> {
  const sessionId = job.identity.ownerSession;
  const child = restart.spawn();
  const failure = await spawned(child, plan.argv[0]!);
  if (failure) {
    finishCapture(job, capture, ctx.config.maxOutputBytes);
    job.settle({ kind: 'runner-failed', reason: failure.message });
    if (ctx.unit !== undefined) ctx.processes.scopes.release(sessionId, ctx.unit);
    return;
  }
  job.pid = child.pid!;
  watched.child = child;
  watched.group = ctx.processes.track({ pgid: job.pid, sessionId, kind: 'job' });
  if (HAS_PROC) job.procStartTime = readProcStat(job.pid)?.startTime;
  ctx.table.record(job);
  await watchJob(job, watched, capture, plan, ctx, { ...restart, startsLeft: restart.startsLeft - 1 });
}
