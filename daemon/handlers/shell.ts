/** `shell/resolve` and `shell/run`: resolve once, then run the resolved spec (its launch: ../runs/launch.ts). */
import { performance } from 'node:perf_hooks';
import { ExecdError } from '../../protocol/errors.js';
import { ShellResolve, ShellRun, type ExecRequest, type ParamsOf } from '../../protocol/methods.js';
import type { ExecSpec, ShellRunResult, YieldedRunResult } from '../../protocol/types.js';
import { maskEnv } from '../runs/env.js';
import type { OutputFlow } from '../runs/foreground.js';
import { handler, type HandlerContext } from '../net/handler.js';
import { admitLaunch, prepareLaunch, resolveLaunch, runLaunch, type Launch } from '../runs/launch.js';
import type { Job } from '../jobs/job.js';
import { failedEnd, jobEnd, runEnd } from '../observability/command-outcome.js';
import { observedCommand, specFacts } from '../observability/command-watch.js';
import type { CommandWatch } from '../observability/observer.js';
import { recordReportedOutputs } from '../state/output-files.js';
import { sessionSpillDir } from '../sessions/session-lifecycle.js';
import { dropCapture, openRunStdin, progressSender } from './shell-stream.js';
import { runYielding } from './yield-run.js';

/** Resolves a request against its session; SESSION_NOT_FOUND when this connection has not opened it. */
export function resolveRequest(request: ExecRequest, { daemon, conn }: HandlerContext): ExecSpec | ExecdError {
  const session = daemon.sessions.require(request.sessionId, conn);
  return session instanceof ExecdError ? session : resolveLaunch(daemon, session, request);
}

/** What a run reports to the command's watch besides its answer. */
interface RunTally {
  watch: CommandWatch;
  /** Bytes the command wrote to stdout and stderr, once it ended. */
  outputBytes: number;
}

/** A `shell/run` with `yieldMs`: cancelled, and aborted at shutdown, like any run until it yields. */
async function yieldingRun(
  params: ParamsOf<typeof ShellRun>,
  yieldMs: number,
  { daemon, conn, token, attached }: HandlerContext,
  launch: Launch,
  tally: RunTally,
): Promise<ShellRunResult | YieldedRunResult | ExecdError> {
  const controller = new AbortController();
  const cancel = token.onCancellationRequested(() => controller.abort());
  let job: Job | undefined;
  const done = runYielding(daemon, {
    launch,
    stdin: params.stdin,
    yieldMs,
    signal: controller.signal,
    onJob: (started) => {
      job = started;
      if (started.pid > 0) tally.watch.running(started.pid);
    },
  });
  daemon.runs.add({ sessionId: params.sessionId, owner: attached ?? conn, controller, done });
  try {
    const result = await done;
    if (!(result instanceof ExecdError) && !('yielded' in result)) {
      recordReportedOutputs(daemon, params.sessionId, [result.stdout.spillPath, result.stderr.spillPath]);
    }
    const snapshot = job?.snapshot();
    if (snapshot) tally.outputBytes = snapshot.stdoutBytes + snapshot.stderrBytes;
    // A run that went on as a job ends when the job settles.
    if (job && !(result instanceof ExecdError) && 'yielded' in result) {
      const yielded = job;
      yielded.settled.then(() => tally.watch.ended(jobEnd(yielded.snapshot()))).catch(() => undefined);
    }
    return result;
  } finally {
    cancel.dispose();
  }
}

/** Handlers of the foreground shell methods. */
export const shellHandlers = [
  handler(ShellResolve, (params, ctx) => {
    const spec = resolveRequest(params, ctx);
    return spec instanceof ExecdError ? spec : { ...spec, env: maskEnv(spec.env) };
  }),

  handler(ShellRun, async (params, ctx) => {
    const spec = resolveRequest(params, ctx);
    if (spec instanceof ExecdError) return spec;
    const tally: RunTally = { watch: observedCommand(ctx, specFacts('run', spec, params)), outputBytes: 0 };
    const requested = performance.now();
    const result = await runResolved(params, ctx, spec, tally);
    if (result instanceof ExecdError) tally.watch.ended(failedEnd(result, Math.round(performance.now() - requested)));
    else if (!('yielded' in result)) tally.watch.ended(runEnd(result, tally.outputBytes));
    return result;
  }),
];

/** Runs a resolved `shell/run` to its answer. */
async function runResolved(
  params: ParamsOf<typeof ShellRun>,
  ctx: HandlerContext,
  spec: ExecSpec,
  tally: RunTally,
): Promise<ShellRunResult | YieldedRunResult | ExecdError> {
  const release = await admitLaunch(ctx.daemon, ctx.conn, spec, params);
  if (release instanceof ExecdError) return release;
  try {
    return await startRun(params, ctx, spec, tally);
  } finally {
    release();
  }
}

/** The rest of a `shell/run` once its process is reserved: confine, spawn, answer. */
async function startRun(
  params: ParamsOf<typeof ShellRun>,
  ctx: HandlerContext,
  spec: ExecSpec,
  tally: RunTally,
): Promise<ShellRunResult | YieldedRunResult | ExecdError> {
  const { daemon, conn, token } = ctx;
  const launch = prepareLaunch(daemon, 'run', spec, params.sessionId);
  if (launch instanceof ExecdError) return launch;

  if (params.yieldMs !== undefined) return yieldingRun(params, params.yieldMs, ctx, launch, tally);

  const controller = new AbortController();
  const spillDir = sessionSpillDir(daemon, params.sessionId);
  const input =
    params.keepStdinOpen && params.outputToken !== undefined
      ? openRunStdin(conn, params.sessionId, params.outputToken, spillDir, launch.unit)
      : undefined;
  if (input instanceof ExecdError) {
    daemon.processes.scopes.release(params.sessionId, launch.unit);
    return input;
  }
  const cancel = token.onCancellationRequested(() => controller.abort());
  // A keyed run answers to whichever request is attached to it now (docs/reconnect.md).
  const attached = ctx.attached ?? (() => ({ conn, params }));
  const flow: OutputFlow = {
    get blocked() {
      return attached().params.outputToken !== undefined && attached().conn.outputFlow.blocked;
    },
    whenOpen: (listener) => attached().conn.outputFlow.whenOpen(listener),
  };
  const done = runLaunch(daemon, launch, {
    signal: controller.signal,
    stdin: params.stdin,
    ...(input && { stdinPath: input.stdin.path, onSpawned: () => input.stdin.spawned() }),
    onRunning: (pid) => tally.watch.running(pid),
    onOutputBytes: (bytes) => {
      tally.outputBytes = bytes;
    },
    // Streaming costs a copy through the daemon: only when asked, or when a repeat may ask.
    ...((params.outputToken !== undefined || ctx.attached) && {
      flow,
      ...progressSender(attached, params.outputEncoding),
    }),
  });
  // A detachable run belongs to no connection: its close does not abort it, the grace does.
  const owner = ctx.attached ?? conn;
  daemon.runs.add({ sessionId: params.sessionId, owner, controller, done });
  let result: Awaited<typeof done>;
  try {
    result = await done;
  } finally {
    input?.close();
    cancel.dispose();
  }
  if (result instanceof ExecdError) return result;
  if (params.keepCapture === false) return dropCapture(result);
  recordReportedOutputs(daemon, params.sessionId, [result.stdout.spillPath, result.stderr.spillPath]);
  return result;
}
