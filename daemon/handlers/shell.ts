/** `shell/resolve` and `shell/run`: resolve once, then run the resolved spec. */
import { join } from 'node:path';
import { ExecdError } from '../../protocol/errors.js';
import { ShellResolve, ShellRun, type ExecRequest, type ParamsOf } from '../../protocol/methods.js';
import type { ExecSpec, ShellRunResult, YieldedRunResult } from '../../protocol/types.js';
import { maskEnv } from '../env.js';
import { runForeground, type OutputFlow } from '../executor/run.js';
import type { DaemonContext } from '../context.js';
import { handler, type HandlerContext } from '../net/handler.js';
import { resolveSpec } from '../resolve.js';
import { checkRequestedPolicy } from '../sandbox/escalation.js';
import { hiddenPaths } from '../sandbox/hidden-paths.js';
import { isConfined } from '../sandbox/modes.js';
import { confine, sandboxUnavailable, type Confinement } from '../sandbox/runner.js';
import { recordReportedOutputs } from '../state/output-files.js';
import { sessionSpillDir } from '../session-lifecycle.js';
import { dropCapture, openRunStdin, progressSender } from './shell-stream.js';
import { runYielding } from './yield-run.js';

/** Resolves a request against its session; SESSION_NOT_FOUND when this connection has not opened it. */
export function resolveRequest(request: ExecRequest, { daemon, conn }: HandlerContext): ExecSpec | ExecdError {
  const session = daemon.sessions.require(request.sessionId, conn);
  if (session instanceof ExecdError) return session;
  const refused = checkRequestedPolicy(request.sandboxPolicy, session.id, session.sandbox);
  if (refused) return refused;
  return resolveSpec(request, {
    session,
    // The session's snapshot: a later config/set changes no open session's defaults or limits.
    config: session.config,
    daemonCwd: process.cwd(),
    baseEnv: daemon.baseEnv,
    shellArgv: daemon.platform.shellArgv,
  });
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
  const config = daemon.config.get();
  if (stdin !== undefined && Buffer.byteLength(stdin) > config.maxStdinBytes) {
    return new ExecdError('LIMIT_EXCEEDED', `stdin is larger than maxStdinBytes (${config.maxStdinBytes})`);
  }
  const processLimit = checkProcessLimits(daemon, sessionId);
  if (processLimit) return processLimit;
  daemon.spill.sweepSoon();
  if (daemon.spill.usedBytes >= config.spillQuotaBytes) {
    return new ExecdError(
      'LIMIT_EXCEEDED',
      `spillQuotaBytes limit reached (${config.spillQuotaBytes}): spill and log files of running commands still hold ${daemon.spill.usedBytes} bytes`,
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
  const config = daemon.config.get();
  if (daemon.processes.countOf(sessionId) >= config.maxProcessesPerSession) {
    return new ExecdError(
      'LIMIT_EXCEEDED',
      `maxProcessesPerSession limit reached (${config.maxProcessesPerSession}) for session ${sessionId}`,
    );
  }
  if (daemon.processes.budgetCount(config.maxProcessesPerSession) >= config.maxProcesses) {
    return new ExecdError('LIMIT_EXCEEDED', `maxProcesses limit reached (${config.maxProcesses})`);
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
 * The sandbox runner's wrapping of a spec (SPEC §6): undefined when unconfined, an error when it
 * cannot be enforced — also while the runner's probe is out (`awaitRunner` first): fail closed.
 */
export function confineSpec(
  daemon: DaemonContext,
  spec: ExecSpec,
  sessionId: string,
): Confinement | ExecdError | undefined {
  const hidden = hiddenPaths({
    stateDir: daemon.stateDir,
    socketPath: daemon.socketPath,
    socketIsFile: daemon.platform.socketIsFile,
    secretFiles: daemon.secretFiles,
  });
  if (!daemon.sandbox.isSettled && isConfined(spec.sandboxPolicy.mode))
    return sandboxUnavailable(spec.sandboxPolicy.mode, 'the sandbox runner has not answered its probe yet');
  return confine(daemon.sandbox.current, spec, {
    hiddenDirs: hidden.dirs,
    hiddenFiles: hidden.files,
    spillDir: sessionSpillDir(daemon, sessionId),
  });
}

/** A `shell/run` with `yieldMs`: cancelled, and aborted at shutdown, like any run until it yields. */
async function yieldingRun(
  params: ParamsOf<typeof ShellRun>,
  yieldMs: number,
  { daemon, conn, token, attached }: HandlerContext,
  spec: ExecSpec,
  confinement: Confinement | undefined,
): Promise<ShellRunResult | YieldedRunResult | ExecdError> {
  const controller = new AbortController();
  const cancel = token.onCancellationRequested(() => controller.abort());
  const done = runYielding(daemon, {
    spec,
    confinement,
    sessionId: params.sessionId,
    stdin: params.stdin,
    yieldMs,
    signal: controller.signal,
  });
  daemon.runs.add({ sessionId: params.sessionId, owner: attached ?? conn, controller, done });
  try {
    const result = await done;
    if (!(result instanceof ExecdError) && !('yielded' in result)) {
      recordReportedOutputs(daemon, params.sessionId, [result.stdout.spillPath, result.stderr.spillPath]);
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
    const { daemon } = ctx;
    const spec = resolveRequest(params, ctx);
    if (spec instanceof ExecdError) return spec;
    const waited = await awaitRunner(spec, params.sessionId, ctx);
    if (waited) return waited;
    const limited = checkSpawnLimits(daemon, params.stdin, params.sessionId);
    if (limited) return limited;
    const release = daemon.processes.reserve(params.sessionId);
    try {
      return await startRun(params, ctx, spec);
    } finally {
      release();
    }
  }),
];

/** The rest of a `shell/run` once its process is reserved: confine, spawn, answer. */
async function startRun(params: ParamsOf<typeof ShellRun>, ctx: HandlerContext, spec: ExecSpec) {
  const { daemon, conn, token } = ctx;
  const runName = daemon.nextRunName();
  spec.env = { ...spec.env, ...daemon.processes.scopes.env(params.sessionId, runName) };
  const confinement = confineSpec(daemon, spec, params.sessionId);
  if (confinement instanceof ExecdError) return confinement;

  if (params.yieldMs !== undefined) return yieldingRun(params, params.yieldMs, ctx, spec, confinement);

  const controller = new AbortController();
  const session = daemon.sessions.get(params.sessionId);
  const spillDir = sessionSpillDir(daemon, params.sessionId);
  const input =
    params.keepStdinOpen && params.outputToken !== undefined
      ? openRunStdin(conn, params.sessionId, params.outputToken, spillDir, runName)
      : undefined;
  if (input instanceof ExecdError) return input;
  const cancel = token.onCancellationRequested(() => controller.abort());
  // A keyed run answers to whichever request is attached to it now (SPEC §14).
  const attached = ctx.attached ?? (() => ({ conn, params }));
  const flow: OutputFlow = {
    get blocked() {
      return attached().params.outputToken !== undefined && attached().conn.outputFlow.blocked;
    },
    whenOpen: (listener) => attached().conn.outputFlow.whenOpen(listener),
  };
  const done = runForeground(spec, {
    config: session?.config ?? daemon.config.get(),
    sessionId: params.sessionId,
    spillPath: (stream) => join(spillDir, `${runName}.${stream}`),
    processes: daemon.processes,
    spawner: daemon.spawner,
    confinement,
    unit: runName,
    signal: controller.signal,
    stdin: params.stdin,
    ...(input && { stdinPath: input.stdin.path, onSpawned: () => input.stdin.spawned() }),
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
