/**
 * Starting a background job: the same `bash -c` spawn as a foreground run, no timeout, both
 * streams logged from byte 0 (stdout written by the process straight into its log file, stderr
 * through a pipe, as for a foreground run), and a watcher that settles the job when its process ends.
 */
import { join } from 'node:path';
import { once } from 'node:events';
import type { Config } from '../../protocol/config.js';
import type { ExecSpec } from '../../protocol/types.js';
import { OutputCollector } from '../../spill/collector.js';
import { FileCapture } from '../../spill/file-capture.js';
import { drainAfterExit } from '../executor/drain.js';
import { groupAlive, terminateGroup } from '../executor/kill.js';
import { HAS_PROC, readProcStat } from '../executor/proc.js';
import { checkWorkdir, spawned, spawnShell, type ShellProcess } from '../executor/spawn.js';
import type { Spawner } from '../executor/spawner.js';
import type { Logger } from '../logger.js';
import type { ProcessRegistry, TrackedGroup } from '../process-registry.js';
import { Job } from './job.js';
import { JobStdin } from './job-stdin.js';
import { CapturedFileStream, CollectedStream, LogFileStream, TailBytesStream } from './job-streams.js';
import type { JobTable } from './job-table.js';
import type { JobLaunchPlan } from './launch-plan.js';
import type { JobOutcome } from './settlement.js';

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
  /** Keep the job's stdin open for `job/write` (SPEC §9.4); `stdin`, if any, is written first. */
  keepStdinOpen?: boolean;
}

/** Where a running job's output goes. */
interface Capture {
  stdout: FileCapture;
  stderr: OutputCollector;
}

/**
 * Creates the job and spawns its process. Resolves once the process runs (its pid is known) or
 * the spawn failed, in which case the job is already settled `failed`.
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
  const limits = { maxBytes: config.maxOutputBytes, maxSpillBytes: config.maxSpillBytes };
  const capture: Capture = {
    stdout: new FileCapture({ ...limits, path: logPaths.stdout, keepFile: true }),
    stderr: new OutputCollector({ ...limits, spillPath: logPaths.stderr, alwaysToFile: true }),
  };
  const job = new Job(
    { id, label: spec.command, ownerSession: sessionId, startedAt: new Date(), logPaths },
    {
      stdout: new CapturedFileStream(capture.stdout, config.maxOutputBytes),
      stderr: new CollectedStream(capture.stderr),
    },
  );
  job.sandbox = plan.sandbox;
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
    if (ctx.keepStdinOpen) stdin = new JobStdin(join(ctx.logDir, `${id}.stdin`));
  } catch (error) {
    return failEarly({ kind: 'spawn-failed', reason: `cannot open a stdin pipe: ${(error as Error).message}` });
  }
  const child = spawnShell(
    ctx.spawner,
    spec,
    stdin ? undefined : ctx.stdin,
    plan.argv,
    { stdout: capture.stdout.target },
    stdin?.path,
  );
  const failure = await spawned(child, plan.argv[0]!);
  stdin?.spawned();
  if (failure) {
    stdin?.close();
    return failEarly({ kind: plan.runnerFailure ? 'runner-failed' : 'spawn-failed', reason: failure.message });
  }
  if (stdin) {
    job.stdin = stdin;
    if (ctx.stdin !== undefined) stdin.write(id, ctx.stdin, false, Number.MAX_SAFE_INTEGER);
    // `settled` never rejects.
    void job.settled.then(() => stdin.close());
  }

  job.pid = child.pid!;
  if (HAS_PROC) job.procStartTime = readProcStat(job.pid)?.startTime;
  table.record(job);
  ctx.log.info({ jobId: id, sessionId, pid: job.pid }, 'job started');
  const group = ctx.processes.track({ pgid: job.pid, sessionId, kind: 'job' });
  void watchJob(job, child, capture, plan, group, ctx);
  return job;
}

/** Follows the process to its end and settles the job. */
async function watchJob(
  job: Job,
  child: ShellProcess,
  capture: Capture,
  plan: JobLaunchPlan,
  group: TrackedGroup,
  ctx: StartJobContext,
): Promise<void> {
  const pid = job.pid;
  let killing: Promise<void> | undefined;
  let noteKill: () => void = () => {};
  const killRequested = new Promise<void>((resolve) => (noteKill = resolve));
  job.killTree = (graceMs) => {
    killing ??= terminateGroup(pid, graceMs, plan.terminate);
    noteKill();
    return killing;
  };
  // A kill that came while the process was being spawned.
  if (job.killRequested) void job.killTree(ctx.config.graceMs);

  child.stderr!.on('data', (chunk: Buffer) => {
    capture.stderr.write(chunk);
    plan.onStderr?.(chunk);
  });
  const [rawExitCode, rawSignal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  const exit = { exitCode: rawExitCode, signal: rawSignal as string | null };
  const { exitCode, signal } = plan.exitFacts ? plan.exitFacts(exit, killing !== undefined) : exit;

  await drainAfterExit(
    child,
    pid,
    ctx.config.graceMs,
    killRequested.then(() => killing),
  );
  if (killing) await killing;
  child.stderr!.destroy();
  const leftover = !killing && groupAlive(pid);
  if (leftover) group.kind = 'leftover';
  else ctx.processes.untrack(group);

  const { stdoutBytes, stderr } = finishCapture(
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
  if (runnerFailed !== undefined) job.settle({ kind: 'runner-failed', reason: runnerFailed });
  else job.settle({ kind: 'exit', exitCode, signal, killRequested: job.killRequested });
}

/**
 * A settled job's output no longer changes: reads go to its log files through a window of the same
 * size, and the memory and descriptors go with the process. A stream whose file passed the cap
 * keeps its tail. A leftover descendant that may still write stdout (`writersAlive`) cannot grow
 * the answered log.
 */
function finishCapture(job: Job, capture: Capture, windowBytes: number, writersAlive?: () => boolean) {
  const stdout = capture.stdout.finish(writersAlive);
  const stdoutBytes = capture.stdout.totalBytes;
  job.streams.stdout =
    stdout.spillPath === undefined
      ? new TailBytesStream(capture.stdout.answeredTail!, stdoutBytes)
      : new LogFileStream(stdout.spillPath, stdoutBytes, windowBytes);
  const stderr = capture.stderr.finish();
  const { spillPath, totalBytes } = capture.stderr;
  if (spillPath !== undefined) job.streams.stderr = new LogFileStream(spillPath, totalBytes, windowBytes);
  return { stdoutBytes, stderr };
}
