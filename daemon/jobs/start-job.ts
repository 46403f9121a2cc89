/**
 * Starting a background job: the same `bash -c` spawn as a foreground run, no timeout, both
 * streams logged from byte 0, and a watcher that settles the job when its process ends.
 */
import { join } from 'node:path';
import { once } from 'node:events';
import type { Config } from '../../protocol/config.js';
import type { ExecSpec } from '../../protocol/types.js';
import { OutputCollector } from '../../spill/collector.js';
import { drainAfterExit } from '../executor/drain.js';
import { groupAlive, terminateGroup } from '../executor/kill.js';
import { HAS_PROC, readProcStat } from '../executor/proc.js';
import { checkWorkdir, spawned, spawnShell, type ShellProcess } from '../executor/spawn.js';
import type { Logger } from '../logger.js';
import type { ProcessRegistry, TrackedGroup } from '../process-registry.js';
import { Job } from './job.js';
import { CollectedStream, LogFileStream, type StreamName } from './job-streams.js';
import type { JobTable } from './job-table.js';
import type { JobLaunchPlan } from './launch-plan.js';
import type { JobOutcome } from './settlement.js';

/** What starting a job needs besides its spec and plan. */
export interface StartJobContext {
  table: JobTable;
  processes: ProcessRegistry;
  /** The configuration as of this start. */
  config: Config;
  /** The owner session's log directory, `<stateDir>/spill/<sessionId>`. */
  logDir: string;
  log: Logger;
  stdin?: string;
}

type Collectors = Record<StreamName, OutputCollector>;

/**
 * Creates the job and spawns its process. Resolves once the process runs (its pid is known) or
 * the spawn failed, in which case the job is already settled `failed`.
 */
export async function startJob(spec: ExecSpec, plan: JobLaunchPlan, sessionId: string, ctx: StartJobContext): Promise<Job> {
  const { config, table } = ctx;
  const id = table.allocateId();
  const logPaths = { stdout: join(ctx.logDir, `${id}.stdout`), stderr: join(ctx.logDir, `${id}.stderr`) };
  const collector = (stream: StreamName) =>
    new OutputCollector({
      maxBytes: config.maxOutputBytes,
      maxSpillBytes: config.maxSpillBytes,
      spillPath: logPaths[stream],
      alwaysToFile: true,
    });
  const collectors: Collectors = { stdout: collector('stdout'), stderr: collector('stderr') };
  const job = new Job(
    { id, label: spec.command, ownerSession: sessionId, startedAt: new Date(), logPaths },
    { stdout: new CollectedStream(collectors.stdout), stderr: new CollectedStream(collectors.stderr) },
  );
  job.sandbox = plan.sandbox;
  table.add(job);

  const failEarly = (outcome: JobOutcome) => {
    collectors.stdout.finish();
    collectors.stderr.finish();
    job.settle(outcome);
    return job;
  };
  if (plan.refused !== undefined) return failEarly({ kind: 'runner-failed', reason: plan.refused });
  const missing = checkWorkdir(spec.workdir);
  if (missing) return failEarly({ kind: 'spawn-failed', reason: missing.message });
  const child = spawnShell(spec, ctx.stdin, plan.argv);
  const failure = await spawned(child, plan.argv[0]!);
  if (failure) return failEarly({ kind: plan.runnerFailure ? 'runner-failed' : 'spawn-failed', reason: failure.message });

  job.pid = child.pid!;
  if (HAS_PROC) job.procStartTime = readProcStat(job.pid)?.startTime;
  table.record(job);
  ctx.log.info({ jobId: id, sessionId, pid: job.pid }, 'job started');
  const group = ctx.processes.track({ pgid: job.pid, sessionId, kind: 'job' });
  void watchJob(job, child, collectors, plan, group, ctx);
  return job;
}

/** Follows the process to its end and settles the job. */
async function watchJob(
  job: Job,
  child: ShellProcess,
  collectors: Collectors,
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

  child.stdout!.on('data', (chunk: Buffer) => collectors.stdout.write(chunk));
  child.stderr!.on('data', (chunk: Buffer) => {
    collectors.stderr.write(chunk);
    plan.onStderr?.(chunk);
  });
  const [rawExitCode, rawSignal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  const exit = { exitCode: rawExitCode, signal: rawSignal as string | null };
  const { exitCode, signal } = plan.exitFacts ? plan.exitFacts(exit, killing !== undefined) : exit;

  await drainAfterExit(child, ctx.config.graceMs, killRequested.then(() => killing));
  if (killing) await killing;
  child.stdout!.destroy();
  child.stderr!.destroy();
  if (!killing && groupAlive(pid)) group.kind = 'leftover';
  else ctx.processes.untrack(group);

  const stdoutBytes = collectors.stdout.totalBytes;
  collectors.stdout.finish();
  const stderr = collectors.stderr.finish();
  readFromLogFiles(job, collectors, ctx.config.maxOutputBytes);
  const runnerFailed = plan.runnerFailure?.({ exitCode, stdoutBytes, stderr: stderr.text, stderrTruncated: stderr.truncated });
  if (runnerFailed !== undefined) job.settle({ kind: 'runner-failed', reason: runnerFailed });
  else job.settle({ kind: 'exit', exitCode, signal, killRequested: job.killRequested });
}

/**
 * A settled job's output no longer changes: reads go to its log files through a window of the same
 * size, and the memory goes with the process. A stream whose file passed the cap keeps its tail.
 */
function readFromLogFiles(job: Job, collectors: Collectors, windowBytes: number): void {
  for (const stream of ['stdout', 'stderr'] as const) {
    const { spillPath, totalBytes } = collectors[stream];
    if (spillPath !== undefined) job.streams[stream] = new LogFileStream(spillPath, totalBytes, windowBytes);
  }
}
