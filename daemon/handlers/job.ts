/**
 * `shell/start` and the job methods: start a background job (its launch: ../runs/launch.ts), read,
 * peek, wait, kill, list and release it. Only connections that opened a job's owner session may touch it.
 */
import { isAbsolute, relative, resolve } from 'node:path';
import { BACKGROUND_DISABLED_MESSAGE, ExecdError } from '../../protocol/errors.js';
import {
  JobClean,
  JobKill,
  JobList,
  JobPeek,
  JobRead,
  JobRelease,
  JobWait,
  JobWrite,
  ShellStart,
  type ParamsOf,
} from '../../protocol/methods.js';
import type { Config } from '../../protocol/config.js';
import type { ExecSpec } from '../../protocol/types.js';
import { jobEnd, failedEnd } from '../observability/command-outcome.js';
import { observedCommand, specFacts } from '../observability/command-watch.js';
import { requireAdmin } from '../sessions/admin.js';
import { handler, type HandlerContext } from '../net/handler.js';
import { waitUntil, type Until } from '../waits/wait-until.js';
import type { Job } from '../jobs/job.js';
import { cleanJobs, killJob, releaseJob, settledWithin } from '../jobs/job-control.js';
import { emptyRead, peekJob, readJob } from '../jobs/job-reads.js';
import { waitForOutput } from '../jobs/read-wait.js';
import { recordReportedOutputs } from '../state/output-files.js';
import { fingerprintRequest } from '../request-keys/fingerprint.js';
import { isHiddenPath } from '../fs/call.js';
import { admitLaunch, prepareLaunch, startJobLaunch } from '../runs/launch.js';
import { resolveRequest } from './shell.js';
import { configFor } from '../sessions/bound-config.js';

/**
 * The job, when this connection opened `sessionId` and that session owns the job:
 * SESSION_NOT_FOUND, JOB_NOT_FOUND or FORBIDDEN otherwise. A job of a session that does not exist
 * in this daemon — one an earlier daemon left (kept by a `keepJobs` shutdown and adopted, or
 * settled before the restart), whose session nobody opened again — is reached by its session's id
 * without opening it: opening it would take facts (a cwd, a sandbox) nobody has any more, and
 * creating it with any facts would grant the same. Anything else there is the missing session.
 */
function ownedJob(params: { sessionId: string; jobId: string }, { daemon, conn }: HandlerContext): Job | ExecdError {
  const session = daemon.sessions.require(params.sessionId, conn);
  if (!(session instanceof ExecdError)) return daemon.jobs.require(params.jobId, params.sessionId);
  if (daemon.sessions.get(params.sessionId) !== undefined) return session;
  const left = daemon.jobs.require(params.jobId, params.sessionId);
  return left instanceof ExecdError ? session : left;
}

/**
 * `until` with its path made absolute against the session's cwd. A path inside the daemon's
 * state dir is refused: commands cannot see it (the sandbox hides it), so neither may a wait.
 */
function resolveUntil(until: Until, sessionId: string, { daemon }: HandlerContext): Until | ExecdError {
  if (until.path === undefined) return until;
  const path = resolve(daemon.sessions.get(sessionId)?.cwd ?? process.cwd(), until.path);
  const fromState = relative(daemon.stateDir, path);
  if (fromState === '' || (!fromState.startsWith('..') && !isAbsolute(fromState))) {
    return new ExecdError('INVALID_PARAMS', "until.path: must not be inside the daemon's state directory");
  }
  return { ...until, path };
}

/**
 * Starts a resolved `shell/start`'s job: admitted under the spawn limits and `maxJobsPerSession`
 * (its process reserved meanwhile), prepared and started (../runs/launch.ts).
 */
async function launchJob(
  params: ParamsOf<typeof ShellStart>,
  { daemon, conn }: HandlerContext,
  spec: ExecSpec,
  config: Config,
): Promise<Job | ExecdError> {
  const release = await admitLaunch(daemon, conn, spec, params, () =>
    daemon.jobs.live(params.sessionId).length >= config.maxJobsPerSession
      ? new ExecdError('LIMIT_EXCEEDED', `maxJobsPerSession limit reached (${config.maxJobsPerSession})`)
      : undefined,
  );
  if (release instanceof ExecdError) return release;
  try {
    const launch = prepareLaunch(daemon, 'job', spec, params.sessionId, { config });
    if (launch instanceof ExecdError) return launch;
    return await startJobLaunch(daemon, launch, {
      stdin: params.stdin,
      keepStdinOpen: params.keepStdinOpen,
      // Journaled, so a repeat of the key after a restart still answers this job.
      ...(params.requestKey !== undefined && {
        requestKey: { key: params.requestKey, fingerprint: fingerprintRequest(ShellStart.method, params) },
      }),
    });
  } finally {
    release();
  }
}

/** Waits open now, per daemon: by session and in all, for `maxWaitsPerSession` and `maxWaits`. */
const openWaits = new WeakMap<object, { total: number; bySession: Map<string, number> }>();

/**
 * Counts one more `job/wait` of `sessionId`, or refuses it past `maxWaitsPerSession` or
 * `maxWaits` (each wait polls and may hold a pattern check, so their number is bounded). The
 * count is taken before any await; the returned release gives it back (idempotent).
 */
function reserveWait(daemon: HandlerContext['daemon'], sessionId: string): ExecdError | (() => void) {
  // Per session: the bound configuration; daemon-wide (`maxWaits`): the live one.
  const config = { ...configFor(daemon, sessionId), maxWaits: daemon.config.get().maxWaits };
  let open = openWaits.get(daemon);
  if (!open) openWaits.set(daemon, (open = { total: 0, bySession: new Map<string, number>() }));
  const own = open.bySession.get(sessionId) ?? 0;
  if (own >= config.maxWaitsPerSession)
    return new ExecdError(
      'LIMIT_EXCEEDED',
      `maxWaitsPerSession limit reached (${config.maxWaitsPerSession}) for session ${sessionId}`,
    );
  if (open.total >= config.maxWaits)
    return new ExecdError('LIMIT_EXCEEDED', `maxWaits limit reached (${config.maxWaits})`);
  open.total += 1;
  open.bySession.set(sessionId, own + 1);
  const held = open;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    held.total -= 1;
    const left = (held.bySession.get(sessionId) ?? 1) - 1;
    if (left > 0) held.bySession.set(sessionId, left);
    else held.bySession.delete(sessionId);
  };
}

/** `job/wait` once counted: until the job settles, a condition holds, or the timeout passes. */
async function waitJob(job: Job, params: ParamsOf<typeof JobWait>, ctx: HandlerContext) {
  if (params.until === undefined) {
    // A caller that cancels or goes away ends its wait (and gives back its slot) at once.
    const stops: Array<() => void> = [];
    const gone = new Promise<void>((resolve) => {
      const cancel = ctx.token.onCancellationRequested(() => resolve());
      stops.push(
        () => cancel.dispose(),
        ctx.conn.onClose(() => resolve()),
      );
    });
    await Promise.race([settledWithin(job, params.timeoutMs), gone]);
    for (const stop of stops) stop();
    return { ...job.snapshot(), endedBy: job.isSettled ? ('settled' as const) : ('timeout' as const) };
  }
  const until = resolveUntil(params.until, params.sessionId, ctx);
  if (until instanceof ExecdError) return until;
  const stops: Array<() => void> = [];
  const endedBy = await waitUntil(job, until, params.timeoutMs, {
    regex: ctx.daemon.regex,
    sessionId: params.sessionId,
    hidden: (real) => isHiddenPath(ctx.daemon, real),
    cancelled: (listener) => {
      const cancel = ctx.token.onCancellationRequested(listener);
      stops.push(() => cancel.dispose(), ctx.conn.onClose(listener));
    },
  });
  for (const stop of stops) stop();
  return endedBy instanceof ExecdError ? endedBy : { ...job.snapshot(), endedBy };
}

/** Handlers of the background job methods. */
export const jobHandlers = [
  handler(ShellStart, async (params, ctx) => {
    const { daemon } = ctx;
    const config = configFor(daemon, params.sessionId);
    if (!config.enableRunInBackground) return new ExecdError('BACKGROUND_DISABLED', BACKGROUND_DISABLED_MESSAGE);
    const spec = resolveRequest(params, ctx);
    if (spec instanceof ExecdError) return spec;
    const watch = observedCommand(ctx, specFacts('job', spec, params));
    const job = await launchJob(params, ctx, spec, config);
    if (job instanceof ExecdError) {
      watch.ended(failedEnd(job, 0));
      return job;
    }
    if (job.pid > 0) watch.running(job.pid);
    // `settled` never rejects; the watch's writes drop what fails.
    const started = job;
    started.settled.then(() => watch.ended(jobEnd(started.snapshot()))).catch(() => undefined);
    return { jobId: job.id, pid: job.pid, startedAt: job.identity.startedAt.toISOString() };
  }),

  handler(JobRead, async (params, ctx) => {
    const job = ownedJob(params, ctx);
    if (job instanceof ExecdError) return job;
    if (params.waitMs !== undefined) {
      // A token cancelled before it was first read never fires its event: check it first.
      if (!ctx.token.isCancellationRequested) {
        await waitForOutput(job, params.waitMs, (listener) => ctx.token.onCancellationRequested(listener));
      }
      // A caller that cancelled or went away while waiting would never see what a read consumes.
      if (ctx.token.isCancellationRequested || ctx.conn.closed) return emptyRead(job);
    }
    const before = job.cursor;
    const result = readJob(job);
    if (job.cursor.stdout !== before.stdout || job.cursor.stderr !== before.stderr) ctx.daemon.jobs.recordCursor(job);
    return result;
  }),

  handler(JobPeek, (params, ctx) => {
    const job = ownedJob(params, ctx);
    return job instanceof ExecdError
      ? job
      : peekJob(job, params, configFor(ctx.daemon, params.sessionId).maxOutputBytes);
  }),

  handler(JobWait, async (params, ctx) => {
    const job = ownedJob(params, ctx);
    if (job instanceof ExecdError) return job;
    const release = reserveWait(ctx.daemon, params.sessionId);
    if (release instanceof ExecdError) return release;
    try {
      return await waitJob(job, params, ctx);
    } finally {
      release();
    }
  }),

  handler(JobKill, async (params, ctx) => {
    const job = ownedJob(params, ctx);
    if (job instanceof ExecdError) return job;
    return { killed: await killJob(job, configFor(ctx.daemon, params.sessionId).graceMs) };
  }),

  handler(JobList, (params, { daemon, conn }) => {
    if ('all' in params)
      return requireAdmin(conn, 'job/list { all }') ?? daemon.jobs.visible().map((job) => job.snapshot());
    const session = daemon.sessions.require(params.sessionId, conn);
    if (session instanceof ExecdError) return session;
    return daemon.jobs.visible(params.sessionId).map((job) => job.snapshot());
  }),

  handler(JobRelease, async (params, ctx) => {
    const job = ownedJob(params, ctx);
    if (job instanceof ExecdError) return job;
    // Reading its files afterwards says they were removed, rather than that they were never reported.
    recordReportedOutputs(ctx.daemon, job.ownerSession, Object.values(job.identity.logPaths));
    await releaseJob(ctx.daemon.jobs, job, configFor(ctx.daemon, params.sessionId).graceMs);
    return { released: true as const };
  }),

  handler(JobClean, async (params, { daemon, conn }) => {
    if ('sessionId' in params) {
      const session = daemon.sessions.require(params.sessionId, conn);
      if (session instanceof ExecdError) return session;
    } else {
      const refused = requireAdmin(conn, 'job/clean { all }');
      if (refused) return refused;
    }
    const settled = daemon.jobs
      .list('sessionId' in params ? params.sessionId : undefined)
      .filter((job) => job.isSettled);
    for (const job of settled) recordReportedOutputs(daemon, job.ownerSession, Object.values(job.identity.logPaths));
    return cleanJobs(daemon.jobs, settled);
  }),
  handler(JobWrite, (params, ctx) => {
    const job = ownedJob(params, ctx);
    if (job instanceof ExecdError) return job;
    if (!job.stdin || !job.isLive) return new ExecdError('STDIN_CLOSED', stdinClosedReason(job));
    return job.stdin.write(job.id, params.data, params.eof ?? false, {
      maxQueuedBytes: configFor(ctx.daemon, params.sessionId).maxStdinBytes,
      maxTotalQueuedBytes: ctx.daemon.config.get().maxTotalStdinBytes,
    });
  }),
];

/** Why `job/write` cannot reach a job's stdin. */
function stdinClosedReason(job: Job): string {
  if (!job.keptStdinOpen) return `job ${job.id} was not started with keepStdinOpen`;
  if (job.restored)
    return `job ${job.id} was started with keepStdinOpen, but its stdin was closed when the daemon restarted`;
  return `job ${job.id} has settled; its stdin is closed`;
}
