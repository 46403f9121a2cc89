/**
 * The one way from a request to a launched process, for a foreground run, a background job and a
 * terminal alike:
 *
 * 1. `resolveLaunch`: the request against its session — the sandbox policy it may ask for, its
 *    resource limits, the fully resolved spec (resolve.ts).
 * 2. `admitLaunch`: the sandbox runner's probe awaited, the spawn limits checked and the process
 *    reserved in the same tick (a terminal checks its own limits first, then `checkProcessLimits`).
 * 3. `prepareLaunch`: the unit in its session's process scope (its environment marker, its cgroup
 *    with the limits) and the runner that starts it — the daemon's spawner (inline or its spawner
 *    process), a session's warm confined spawner, or the Landlock launcher / bwrap wrapping.
 * 4. Start: `runLaunch` (a foreground run, foreground.ts), `startJobLaunch` (a job,
 *    jobs/start-job.ts); a terminal's PTY is spawned by terminals/ within `launchTarget`.
 *
 * Registration with the process registry (and so the run journal) happens where the pid is first
 * known, in the starter. The handlers keep what is theirs: answering, yielding, streaming.
 */
import { join } from 'node:path';
import type { Config } from '../../protocol/config.js';
import { ExecdError } from '../../protocol/errors.js';
import type { ExecRequest } from '../../protocol/methods.js';
import type { ExecSpec, ShellRunResult } from '../../protocol/types.js';
import type { DaemonContext } from '../context.js';
import { runForeground, type RunContext } from './foreground.js';
import { withVariables } from './env.js';
import type { CgroupTarget } from '../executor/spawn-messages.js';
import type { Job } from '../jobs/job.js';
import { planJobLaunch } from '../jobs/launch-plan.js';
import { startJob, type StartJobContext } from '../jobs/start-job.js';
import { unitLimits } from '../limits/resolve-limits.js';
import { checkRequestedPolicy } from '../sandbox/escalation.js';
import { hiddenPaths } from '../sandbox/hidden-paths.js';
import { isConfined } from '../sandbox/modes.js';
import { confine, sandboxUnavailable, type Confinement } from '../sandbox/runner.js';
import { configFor } from '../sessions/bound-config.js';
import { sessionSpillDir, sessionTempDir } from '../sessions/session-lifecycle.js';
import type { Session, SessionHolder } from '../sessions/sessions.js';
import { resolveSpec } from './resolve.js';

/** What a launch starts: a foreground run, a background job, or a terminal's program on a PTY. */
export type LaunchKind = 'run' | 'job' | 'terminal';

/** A request resolved, its unit prepared and its runner chosen: ready to start. */
export interface Launch {
  kind: LaunchKind;
  sessionId: string;
  /** The resolved spec; its environment carries the unit's scope marker. */
  spec: ExecSpec;
  /** The unit in its session's process scope: the run's name, `job-<run name>`, or the terminal's id. */
  unit: string;
  /** The sandbox runner's wrapping of the spec; undefined when unconfined. */
  confinement: Confinement | undefined;
  /** A job's only: why no runner can enforce its mode. The job then fails at once; it never runs unconfined. */
  refused?: ExecdError;
  /** The configuration the launch is bound by. */
  config: Config;
}

/**
 * A request resolved against `session`: the sandbox policy it asks for checked, its resource
 * limits resolved against the configuration the session is bound by, then the spec.
 */
export function resolveLaunch(daemon: DaemonContext, session: Session, request: ExecRequest): ExecSpec | ExecdError {
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
async function awaitRunner(
  daemon: DaemonContext,
  holder: SessionHolder,
  spec: ExecSpec,
  sessionId: string,
): Promise<ExecdError | undefined> {
  if (daemon.sandbox.isSettled || !isConfined(spec.sandboxPolicy.mode)) return undefined;
  await daemon.sandbox.settled;
  const session = daemon.sessions.require(sessionId, holder);
  return session instanceof ExecdError ? session : undefined;
}

/**
 * Why a resolved run or job may not start now — the runner, the spawn limits, then `check` (a
 * job's own) — or else the release of the process it reserved: in the same tick as the checks, so
 * concurrent launches cannot all pass the process limits.
 */
export async function admitLaunch(
  daemon: DaemonContext,
  holder: SessionHolder,
  spec: ExecSpec,
  request: { sessionId: string; stdin?: string | undefined },
  check?: () => ExecdError | undefined,
): Promise<ExecdError | (() => void)> {
  const waited = await awaitRunner(daemon, holder, spec, request.sessionId);
  if (waited) return waited;
  const limited = checkSpawnLimits(daemon, request.stdin, request.sessionId) ?? check?.();
  if (limited) return limited;
  return daemon.processes.reserve(request.sessionId);
}

/**
 * The sandbox runner's wrapping of a spec (docs/sandbox.md): undefined when unconfined, an error
 * when it cannot be enforced — also while the runner's probe is out (`admitLaunch` awaits it
 * first): fail closed. `warm`: under Landlock, the session's confined spawner starts the command
 * (runs and jobs, docs/sandbox-backends.md); otherwise the launcher wraps it.
 */
function confineSpec(
  daemon: DaemonContext,
  spec: ExecSpec,
  sessionId: string,
  warm: boolean,
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

/**
 * Gives a resolved, admitted spec its unit and its runner: the unit's scope marker joins the
 * environment (the runner sees it, and carries it to the command), the runner wraps the spec, and
 * the unit's cgroup is made with the spec's limits. A spec no runner can confine is refused here
 * (SANDBOX_UNAVAILABLE), except a job's: that one is started as a job that fails at once, so the
 * caller still gets its id. `unit`: a terminal's id; runs and jobs are named here.
 */
export function prepareLaunch(
  daemon: DaemonContext,
  kind: LaunchKind,
  spec: ExecSpec,
  sessionId: string,
  options: { unit?: string; config?: Config } = {},
): Launch | ExecdError {
  const unit = options.unit ?? (kind === 'job' ? `job-${daemon.nextRunName()}` : daemon.nextRunName());
  const { scopes } = daemon.processes;
  spec.env = withVariables(spec.env, scopes.env(sessionId, unit));
  // A terminal's program is no shell command the confined spawner could start: the launcher wraps it.
  const confinement = confineSpec(daemon, spec, sessionId, kind !== 'terminal');
  if (confinement instanceof ExecdError && kind !== 'job') return confinement;
  const unlimited = scopes.prepareUnit(sessionId, unit, spec.limits);
  if (unlimited) return unlimited;
  return {
    kind,
    sessionId,
    spec,
    unit,
    config: options.config ?? configFor(daemon, sessionId),
    ...(confinement instanceof ExecdError ? { confinement: undefined, refused: confinement } : { confinement }),
  };
}

/** The cgroup a launch's process is born in (process-scopes.ts); undefined where there are none. */
export function launchTarget(daemon: DaemonContext, launch: Launch): CgroupTarget | undefined {
  return daemon.processes.scopes.target(launch.sessionId, launch.unit);
}

/** What a foreground run adds to its launch: its stdin, its cancellation, its streaming and watches. */
export type RunStart = Omit<
  RunContext,
  'config' | 'sessionId' | 'spillPath' | 'processes' | 'spawner' | 'confinement' | 'unit'
>;

/** Starts a prepared run and follows it to its end; its spill files are named for its unit. */
export function runLaunch(
  daemon: DaemonContext,
  launch: Launch,
  start: RunStart,
): Promise<ShellRunResult | ExecdError> {
  const spillDir = sessionSpillDir(daemon, launch.sessionId);
  return runForeground(launch.spec, {
    config: launch.config,
    sessionId: launch.sessionId,
    spillPath: (stream) => join(spillDir, `${launch.unit}.${stream}`),
    processes: daemon.processes,
    spawner: daemon.spawner,
    ...(launch.confinement && { confinement: launch.confinement }),
    unit: launch.unit,
    ...start,
  });
}

/** What a job adds to its launch: its stdin, whether it is held by a run, its request key. */
export type JobStart = Pick<StartJobContext, 'stdin' | 'keepStdinOpen' | 'held' | 'requestKey'>;

/** Starts a prepared job; resolves once it runs or, failed, is already settled (see `startJob`). */
export function startJobLaunch(daemon: DaemonContext, launch: Launch, start: JobStart): Promise<Job> {
  const { spec, sessionId } = launch;
  return startJob(spec, planJobLaunch(spec, launch.refused ?? launch.confinement), sessionId, {
    table: daemon.jobs,
    processes: daemon.processes,
    spawner: daemon.spawner,
    config: launch.config,
    logDir: sessionSpillDir(daemon, sessionId),
    log: daemon.log,
    unit: launch.unit,
    ...start,
  });
}
