/** `shell/resolve` and `shell/run`: resolve once, then run the resolved spec. */
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ExecdError } from '../../protocol/errors.js';
import { ShellResolve, ShellRun, type ExecRequest, type ParamsOf } from '../../protocol/methods.js';
import type { ExecSpec, ShellRunResult, YieldedRunResult } from '../../protocol/types.js';
import { maskEnv } from '../runs/env.js';
import { runForeground, type OutputFlow } from '../executor/run.js';
import type { DaemonContext } from '../context.js';
import { unitLimits } from '../limits/resolve-limits.js';
import { handler, type HandlerContext } from '../net/handler.js';
import { resolveSpec } from '../runs/resolve.js';
import type { Job } from '../jobs/job.js';
import { failedEnd, jobEnd, runEnd } from '../observability/command-outcome.js';
import { observedCommand, specFacts } from '../observability/command-watch.js';
import type { CommandWatch } from '../observability/observer.js';
import { checkRequestedPolicy } from '../sandbox/escalation.js';
import { hiddenPaths } from '../sandbox/hidden-paths.js';
import { isConfined } from '../sandbox/modes.js';
import { confine, sandboxUnavailable, type Confinement } from '../sandbox/runner.js';
import { recordReportedOutputs } from '../state/output-files.js';
import { sessionSpillDir, sessionTempDir } from '../sessions/session-lifecycle.js';
import { dropCapture, openRunStdin, progressSender } from './shell-stream.js';
import { runYielding } from './yield-run.js';
import { configFor } from '../sessions/bound-config.js';

/** Resolves a request against its session; SESSION_NOT_FOUND when this connection has not opened it. */
export function resolveRequest(request: ExecRequest, { daemon, conn }: HandlerContext): ExecSpec | ExecdError {
  const session = daemon.sessions.require(request.sessionId, conn);
  if (session instanceof ExecdError) return session;
  const refused = checkRequestedPolicy(request.sandboxPolicy, session.id, session.sandbox);
  if (refused) return refused;
  // Against the configuration the session is bound by, like every other limit of its commands.
  const config = configFor(daemon, session);
  const limits = unitLimits(session.limits, request.limits, config, daemon.processes.scopes.limitsCapability);
  if (limits instanceof ExecdError) return limits;
  const spec = resolveSpec(request, {
    session,
    // A later config/set may narrow an open session's limits, never widen them or move its defaults.
    config,
    daemonCwd: process.cwd(),
    baseEnv: daemon.baseEnv,
    shellArgv: daemon.platform.shellArgv,
  });
  if (limits) spec.limits = limits;
  return spec;
}

/**
 * LIMIT_EXCEEDED when a new process would pass `maxProcesses`, stdin passes `maxStdinBytes`, or
 * spill and log files the sweep may not remove yet fill `spillQuotaBytes`.
 */
export function checkSpawnLimits(
  daemon: DaemonContext,
  stdin: string | undefined,
  sessionId: string,
): ExecdError | undefined {
  const config = configFor(daemon, sessionId);
  if (stdin !== undefined && Buffer.byteLength(stdin) > config.maxStdinBytes) {
    return new ExecdError('LIMIT_EXCEEDED', `stdin is larger than maxStdinBytes (${config.maxStdinBytes})`);
  }
  const processLimit = checkProcessLimits(daemon, sessionId);
  if (processLimit) return processLimit;
  daemon.spill.sweepSoon();
  // Daemon-wide: the live configuration.
  const { spillQuotaBytes } = daemon.config.get();
  if (daemon.spill.usedBytes >= spillQuotaBytes) {
    return new ExecdError(
      'LIMIT_EXCEEDED',
      `spillQuotaBytes limit reached (${spillQuotaBytes}): spill and log files of running commands still hold ${daemon.spill.usedBytes} bytes`,
    );
  }
  return undefined;
}

/**
 * LIMIT_EXCEEDED when one more process of `sessionId` would pass `maxProcessesPerSession` (so one
 * session cannot use up what the others need) or the daemon-wide `maxProcesses`. A caller that
 * passes reserves the process at once (`processes.reserve`), before any await.
 */
export function checkProcessLimits(daemon: DaemonContext, sessionId: string): ExecdError | undefined {
  // Per session: the bound configuration; daemon-wide (`maxProcesses`): the live one.
  const config = configFor(daemon, sessionId);
  const { maxProcesses } = daemon.config.get();
  if (daemon.processes.countOf(sessionId) >= config.maxProcessesPerSession) {
    return new ExecdError(
      'LIMIT_EXCEEDED',
      `maxProcessesPerSession limit reached (${config.maxProcessesPerSession}) for session ${sessionId}`,
    );
  }
  if (daemon.processes.budgetCount(config.maxProcessesPerSession) >= maxProcesses) {
    return new ExecdError('LIMIT_EXCEEDED', `maxProcesses limit reached (${maxProcesses})`);
  }
  return undefined;
}

/**
 * Waits, for a confined spec, until the sandbox runner's last probe has answered (only Landlock's
 * can still be out, in a daemon's first moments); then the session must still be open.
 */
export async function awaitRunner(
  spec: ExecSpec,
  sessionId: string,
  { daemon, conn }: HandlerContext,
): Promise<ExecdError | undefined> {
  if (daemon.sandbox.isSettled || !isConfined(spec.sandboxPolicy.mode)) return undefined;
  await daemon.sandbox.settled;
  const session = daemon.sessions.require(sessionId, conn);
  return session instanceof ExecdError ? session : undefined;
}

/**
 * The sandbox runner's wrapping of a spec (docs/sandbox.md): undefined when unconfined, an error when it
 * cannot be enforced — also while the runner's probe is out (`awaitRunner` first): fail closed.
 * `warm`: under Landlock, the session's confined spawner starts the command (runs and jobs,
 * docs/sandbox-backends.md); otherwise the launcher wraps it.
 */
export function confineSpec(
  daemon: DaemonContext,
  spec: ExecSpec,
  sessionId: string,
  warm = false,
): Confinement | ExecdError | undefined {
  const hidden = hiddenPaths({
    stateDir: daemon.stateDir,
    socketPath: daemon.socketPath,
    socketIsFile: daemon.platform.socketIsFile,
    secretFiles: daemon.secretFiles,
  });
  if (!daemon.sandbox.isSettled && isConfined(spec.sandboxPolicy.mode))
    return sandboxUnavailable(spec.sandboxPolicy.mode, 'the sandbox runner has not answered its probe yet');
  return confine(
    daemon.sandbox.current,
    spec,
    {
      hiddenDirs: hidden.dirs,
      hiddenFiles: hidden.files,
      spillDir: sessionSpillDir(daemon, sessionId),
      tempDir: sessionTempDir(daemon, sessionId),
    },
    warm ? (plan) => daemon.confinedSpawners.for(sessionId, plan) : undefined,
  );
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
  spec: ExecSpec,
  confinement: Confinement | undefined,
  tally: RunTally,
  unit: string,
): Promise<ShellRunResult | YieldedRunResult | ExecdError> {
  const controller = new AbortController();
  const cancel = token.onCancellationRequested(() => controller.abort());
  let job: Job | undefined;
  const done = runYielding(daemon, {
    spec,
    confinement,
    sessionId: params.sessionId,
    stdin: params.stdin,
    yieldMs,
    signal: controller.signal,
    onJob: (started) => {
      job = started;
      if (started.pid > 0) tally.watch.running(started.pid);
    },
    unit,
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
  const { daemon } = ctx;
  const waited = await awaitRunner(spec, params.sessionId, ctx);
  if (waited) return waited;
  const limited = checkSpawnLimits(daemon, params.stdin, params.sessionId);
  if (limited) return limited;
  // Reserved before the next await: concurrent runs cannot all pass the process limits.
  const release = daemon.processes.reserve(params.sessionId);
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
  const runName = daemon.nextRunName();
  const { scopes } = daemon.processes;
  spec.env = { ...spec.env, ...scopes.env(params.sessionId, runName) };
  const confinement = confineSpec(daemon, spec, params.sessionId, true);
  if (confinement instanceof ExecdError) return confinement;
  const unlimited = scopes.prepareUnit(params.sessionId, runName, spec.limits);
  if (unlimited) return unlimited;

  if (params.yieldMs !== undefined) return yieldingRun(params, params.yieldMs, ctx, spec, confinement, tally, runName);

  const controller = new AbortController();
  const spillDir = sessionSpillDir(daemon, params.sessionId);
  const input =
    params.keepStdinOpen && params.outputToken !== undefined
      ? openRunStdin(conn, params.sessionId, params.outputToken, spillDir, runName)
      : undefined;
  if (input instanceof ExecdError) {
    scopes.release(params.sessionId, runName);
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
  const done = runForeground(spec, {
    config: configFor(daemon, params.sessionId),
    sessionId: params.sessionId,
    spillPath: (stream) => join(spillDir, `${runName}.${stream}`),
    processes: daemon.processes,
    spawner: daemon.spawner,
    confinement,
    unit: runName,
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
