/**
 * The graceful shutdown: the steps, in order, that leave no process, timer or socket behind. Each
 * step that fails or passes its bound is logged and the next one runs anyway, so killing the
 * processes and removing the lock never depend on an earlier step.
 */
import type { Ownership } from '../shared/ownership.js';
import type { DaemonContext } from './context.js';
import { releaseAllFiles } from './fs/service.js';
import { keepOrKillJobs, killAllJobs } from './jobs/job-control.js';
import type { Job } from './jobs/job.js';
import type { Logger } from './log/logger.js';
import type { ClientConnection } from './net/connection.js';
import type { NetworkListeners } from './net/listeners.js';
import type { PrivateListener } from './net/socket.js';
import type { Observability } from './observability/index.js';
import { killEscapedProcesses } from './processes/process-scopes.js';
import { SHUTDOWN_ABORT, TERMINALS_DO_NOT_SURVIVE } from './runs/active-runs.js';
import type { RunJournal } from './runs/run-journal.js';
import type { SpillSweeper } from './state/spill-sweep.js';

/** How long shutdown waits for the last answers to be read by their clients. */
const FLUSH_WAIT_MS = 1_000;

/** What a shutdown ends, beyond the context. */
export interface ShutdownParts {
  context: DaemonContext;
  connections: readonly ClientConnection[];
  listener: PrivateListener | undefined;
  network: NetworkListeners | undefined;
  observability: Observability | undefined;
  runJournal: RunJournal;
  spill: SpillSweeper;
  ownership: Ownership;
  /** Stops the daemon's own timers (idle sessions, the quiet-time collection). */
  stopTimers(): void;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** One step of an ending: run, logged if it fails or passes `timeoutMs`; never rejects. */
export type Step = (name: string, action: () => unknown, timeoutMs?: number) => Promise<void>;

/** The steps of an ending (`what`: shutdown, upgrade), each failure logged under that name. */
export function loggedSteps(log: Logger, what: string): Step {
  return async (name, action, timeoutMs) => {
    try {
      const done = Promise.resolve(action()).then(() => true);
      const finished =
        timeoutMs === undefined ? await done : await Promise.race([done, delay(timeoutMs).then(() => false)]);
      if (!finished) log.error({ step: name, timeoutMs }, `${what} step timed out`);
    } catch (error) {
      log.error({ step: name, err: error instanceof Error ? error.message : String(error) }, `${what} step failed`);
    }
  };
}

/**
 * Leaves the running jobs running, journaled for the daemon after this one (docs/reconnect.md):
 * kept groups are no longer this daemon's, so no later step kills them, nor its spawners.
 * `detach` may keep a job whose output the daemon reads (an upgrade hands its pipes over).
 */
export async function keepRunningJobs(
  context: DaemonContext,
  graceMs: number,
  detach?: (job: Job) => boolean,
): Promise<Job[]> {
  const kept = await keepOrKillJobs(context.jobs, context.processes, graceMs, detach);
  context.spawner.keep(kept.map((job) => job.pid));
  context.confinedSpawners.keep(kept.map((job) => job.pid));
  return kept;
}

/**
 * What every ending does once the runs are answered and the jobs kept or killed: terminals end
 * with `terminalReason` (a PTY does not outlive its master, this process), file transfers and
 * watches end, the journals close, and every tracked group still alive is killed.
 */
export async function endTheRest(
  step: Step,
  context: DaemonContext,
  runJournal: RunJournal,
  terminalReason: string,
): Promise<void> {
  const { jobs, processes } = context;
  const graceMs = context.config.get().graceMs;
  await step('close terminals', () => context.terminals.closeAll(terminalReason), killBound(graceMs));
  await step('end file transfers and watches', () => releaseAllFiles(context));
  // Landlock's probe may still be out in a daemon's first moments: its process and scratch
  // directory end with it (within the probe's own timeout).
  await step('wait for the sandbox probe', () => context.sandbox.settled);
  await step('close the journal', () => jobs.close());
  await step('kill leftovers', () => processes.killLeftovers(undefined, graceMs));
  // Whatever an earlier step could not end (it failed) is killed here, whatever its kind.
  await step('kill every group', () => processes.killAll(graceMs));
  await step('close the run journal', () => runJournal.close());
}

/**
 * How long a step that kills may take: a tree is gone at most graceMs + 5 s after its kill; one
 * that still has not answered by then is not waited for (a later step kills every group left).
 */
export function killBound(graceMs: number): number {
  return graceMs + 10_000;
}

/** Shuts a daemon down; never rejects (a failed step is logged). `keepJobs` leaves running jobs for the next daemon. */
export async function shutDown(parts: ShutdownParts, reason: string, keepJobs: boolean): Promise<void> {
  const { context, connections: open } = parts;
  const { log, jobs, processes } = context;
  const step = loggedSteps(log, 'shutdown');

  context.shuttingDown = true;
  await step('log', () => log.info({ reason }, 'shutting down'));
  await step('stop the timers', () => parts.stopTimers());
  await step('stop listening', () => parts.listener?.server.close());
  await step('stop listening on the network', () => parts.network?.close());
  const graceMs = context.config.get().graceMs;
  // In-flight runs are answered (aborted) before their connections go.
  await step('abort runs', () => context.runs.abortWhere(() => true, SHUTDOWN_ABORT), killBound(graceMs));
  if (keepJobs)
    await step(
      'keep jobs',
      async () => {
        const kept = await keepRunningJobs(context, graceMs);
        log.info({ kept: kept.map((job) => job.id) }, 'running jobs left for the next daemon');
      },
      killBound(graceMs),
    );
  else await step('kill jobs', () => killAllJobs(jobs, graceMs), killBound(graceMs));
  await endTheRest(step, context, parts.runJournal, keepJobs ? TERMINALS_DO_NOT_SURVIVE : 'daemon shut down');
  // The one step that ends processes outside every tracked group: a shutdown that keeps jobs
  // running across a restart skips it, or their escaped descendants would die here.
  if (!keepJobs) await step('kill escaped processes', () => killEscapedProcesses(processes.scopes, graceMs));
  // Every aborted run is answered, then the answers reach their clients before the process
  // exits (a peer that does not read gets FLUSH_WAIT_MS for each step).
  await step('flush answers', () =>
    Promise.race([Promise.all(open.map((conn) => conn.answered())), delay(FLUSH_WAIT_MS)]),
  );
  await step('close connections', () => {
    for (const conn of open) conn.close();
  });
  await step('wait for connections', () =>
    Promise.race([Promise.all(open.map((conn) => conn.gone)), delay(FLUSH_WAIT_MS)]),
  );
  await step('remove the socket', () => parts.listener?.removeSocket());
  // Last: until here /readyz answers 503 shutting down, and the audit log takes the last ends.
  await step('close the observability listener and the audit log', () => parts.observability?.close());
  await step('release the locks', () => parts.ownership.release());
  await step('stop the sweep', () => parts.spill.stop());
  await step('close the spawner', () => context.spawner.close());
  await step('close the confined spawners', () => context.confinedSpawners.close());
  await step('end the pattern thread', () => context.regex.close());
  await step('log', () => log.info('shut down'));
}
