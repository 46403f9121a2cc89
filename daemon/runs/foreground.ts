/**
 * The foreground run (PROTOCOL.md): spawn, capture both streams, one fused deadline, tree kill, and
 * a settlement that never waits more than `graceMs` for pipes a descendant still holds open.
 */
import { performance } from 'node:perf_hooks';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import type { Config } from '../../protocol/config.js';
import { ExecdError } from '../../protocol/errors.js';
import type { ExecSpec, ShellRunResult } from '../../protocol/types.js';
import { OutputCollector } from '../../spill/collector.js';
import { FileCapture, openFileCapture } from '../../spill/file-capture.js';
import type { ProcessRegistry } from '../processes/process-registry.js';
import { DenialScanner } from '../sandbox/denial.js';
import { confinedExit } from '../sandbox/exit-status.js';
import {
  lostMountRace,
  runnerFailure,
  RunnerMessageHold,
  RUNNER_STARTS,
  sendThrough,
} from '../sandbox/runner-failure.js';
import { sandboxReport, sandboxUnavailable, type Confinement } from '../sandbox/runner.js';
import { Deadline, SHUTDOWN_ABORT } from '../executor/deadline.js';
import { drainAfterExit } from '../executor/drain.js';
import { groupAlive } from '../processes/group-signals.js';
import { terminate, terminateGroup, unitParts } from '../processes/terminate.js';
import { checkWorkdir, spawned, spawnShell } from '../executor/spawn.js';
import type { Spawner } from '../executor/spawner.js';

/** Which stream a chunk of streamed output came from. */
export type StreamName = 'stdout' | 'stderr';

/** What a foreground run needs besides its spec. */
export interface RunContext {
  /** The configuration as of the start of this run. */
  config: Config;
  sessionId: string;
  /** Spill file path for a stream, should it outgrow memory. */
  spillPath: (stream: StreamName) => string;
  processes: ProcessRegistry;
  spawner: Spawner;
  /** The caller's cancellation. */
  signal?: AbortSignal;
  stdin?: string;
  /** A FIFO the command reads as its stdin (`keepStdinOpen`), instead of `stdin`. */
  stdinPath?: string;
  /** Called once the spawn was attempted, whatever its outcome (the FIFO's name may go). */
  onSpawned?: () => void;
  /** Called once the command's process runs, with its pid (what watches the daemon, observability/). */
  onRunning?: (pid: number) => void;
  /** Called as the run ends with the bytes the command wrote to stdout and stderr together. */
  onOutputBytes?: (bytes: number) => void;
  /** Streaming: decoded text as it arrives, in order. */
  onOutput?: (stream: StreamName, text: string) => void;
  /** Streaming the exact bytes instead (`outputEncoding: 'base64'`), in order. */
  onBytes?: (stream: StreamName, chunk: Buffer) => void;
  /** Set for a confined mode: the command runs through the sandbox runner. */
  confinement?: Confinement;
  /** With `onOutput`: the consumer's back-pressure; the command's pipes are not read while it is blocked. */
  flow?: OutputFlow;
  /** The run's unit in its session's process scope (process-scopes.ts): its escaped processes are found there. */
  unit?: string;
}

/** Back-pressure of a streaming consumer (a client connection's unsent bytes). */
export interface OutputFlow {
  /** True while the consumer has more queued than it should: stop reading the command. */
  readonly blocked: boolean;
  /** Calls `listener` once, when the consumer is no longer blocked (or is gone). */
  whenOpen(listener: () => void): void;
}

/**
 * Reads the piped streams only while `flow` is open: a command that writes faster than the client
 * reads then blocks on its full pipe, like a shell pipeline, instead of the daemon queueing its
 * output or dropping the client. Returns whether the pipes are paused now.
 */
function throttle(pipes: Array<Readable | null>, flow: OutputFlow | undefined): () => boolean {
  let paused = false;
  const check = () => {
    if (paused || !flow?.blocked) return;
    paused = true;
    for (const pipe of pipes) pipe?.pause();
    flow.whenOpen(() => {
      paused = false;
      for (const pipe of pipes) if (!pipe?.destroyed) pipe?.resume();
    });
  };
  for (const pipe of pipes) pipe?.on('data', check);
  return () => paused;
}

/** What `runOnce` answers when its runner failed in a way worth starting again. */
const START_AGAIN = Symbol('start again');

/** Runs a resolved spec to its end. Non-zero exits, timeouts and aborts are results, not errors. */
export async function runForeground(spec: ExecSpec, ctx: RunContext): Promise<ShellRunResult | ExecdError> {
  const missing = checkWorkdir(spec.workdir);
  if (missing) return missing;
  // A FIFO stdin is unlinked at the first spawn: such a run is started once.
  const starts = ctx.stdinPath === undefined ? RUNNER_STARTS : 1;
  for (let start = 1; ; start++) {
    const outcome = await runOnce(spec, ctx, start < starts);
    if (outcome !== START_AGAIN) return outcome;
  }
}

/** One start of a run; `START_AGAIN` (only when `mayStartAgain`) when its runner lost a mount race. */
async function runOnce(
  spec: ExecSpec,
  ctx: RunContext,
  mayStartAgain: boolean,
): Promise<ShellRunResult | ExecdError | typeof START_AGAIN> {
  const { config, confinement } = ctx;
  const started = performance.now();
  const streamed = ctx.onOutput !== undefined || ctx.onBytes !== undefined;
  // Whatever streams of a confined run waits while it may be the runner's failure (runner-failure.ts).
  const hold = confinement && streamed ? new RunnerMessageHold() : undefined;
  const collector = (stream: StreamName, maxBytes: number) =>
    new OutputCollector({
      maxBytes,
      maxSpillBytes: config.maxSpillBytes,
      spillPath: ctx.spillPath(stream),
      onText: ctx.onOutput && ((text) => sendThrough(hold, () => ctx.onOutput!(stream, text))),
      onBytes: ctx.onBytes && ((chunk) => sendThrough(hold, () => ctx.onBytes!(stream, chunk))),
    });
  // A capture file that cannot be opened, or a nearly full disk, means a pipe (see openFileCapture).
  const fileCapture = (stream: StreamName, maxBytes: number) => {
    const capture = openFileCapture({ maxBytes, maxSpillBytes: config.maxSpillBytes, path: ctx.spillPath(stream) });
    return capture instanceof FileCapture ? capture : collector(stream, maxBytes);
  };
  // A stream goes straight from the child into its capture file unless it is streamed (or, for
  // stderr, scanned for sandbox denials): no byte passes through the daemon, capture runs at the
  // speed of a shell redirect, and a run without pipes costs no pipe handling at all.
  // A confined spawner cannot open capture files (they are in the hidden state dir): pipes.
  const piped = streamed || confinement?.spawner !== undefined;
  const stdout = piped ? collector('stdout', spec.stdoutMaxBytes) : fileCapture('stdout', spec.stdoutMaxBytes);
  const stderr =
    streamed || confinement ? collector('stderr', config.maxOutputBytes) : fileCapture('stderr', config.maxOutputBytes);
  const files = {
    ...(stdout instanceof FileCapture && { stdout: stdout.target }),
    ...(stderr instanceof FileCapture && { stderr: stderr.target }),
  };

  const launched = confinement?.env ? { ...spec, env: confinement.env } : spec;
  const { scopes } = ctx.processes;
  const unit = ctx.unit;
  const cgroup = unit === undefined ? undefined : scopes.target(ctx.sessionId, unit);
  const spawner = confinement?.spawner ?? ctx.spawner;
  const child = spawnShell(spawner, launched, ctx.stdin, confinement?.argv, files, ctx.stdinPath, 0, cgroup);
  const failure = await spawned(child, confinement ? confinement.argv[0]! : spec.argv[0]!);
  ctx.onSpawned?.();
  if (failure) {
    // A confined spawner killed before it answered may have started the command: its unit goes.
    if (unit !== undefined && confinement?.spawner) await scopes.kill(ctx.sessionId, unit, 0);
    if (unit !== undefined) scopes.release(ctx.sessionId, unit);
    for (const capture of [stdout, stderr]) if (capture instanceof FileCapture) capture.abandon();
    return confinement ? sandboxUnavailable(confinement.mode, failure.message) : failure;
  }
  const pid = child.pid!;
  const group = ctx.processes.track({ pgid: pid, sessionId: ctx.sessionId, kind: 'run' });
  ctx.onRunning?.(pid);

  if (stdout instanceof OutputCollector) {
    child.stdout!.on('data', (chunk: Buffer) => {
      hold?.release();
      stdout.write(chunk);
    });
  }
  const denials = confinement && new DenialScanner(confinement.denialSignatures);
  if (stderr instanceof OutputCollector) {
    child.stderr!.on('data', (chunk: Buffer) => {
      hold?.see(chunk);
      stderr.write(chunk);
      denials?.write(chunk);
    });
  }
  const paused = throttle([child.stdout, child.stderr], ctx.flow);
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;

  const deadline = new Deadline(spec.timeoutMs, ctx.signal);
  // The timeout or abort ends the run's group and, at the same time, what of the run left it.
  const killed = deadline.fired.then(async () => {
    await terminate(unitParts(scopes, pid, ctx.sessionId, unit, confinement?.terminate), config.graceMs);
  });

  const [rawExitCode, rawSignal] = await exited;
  if (child.lost !== undefined) {
    // The exit could not be observed: the group was killed; the run failed, it did not end.
    deadline.dispose();
    await terminateGroup(pid, 0);
    ctx.processes.untrack(group);
    for (const capture of [stdout, stderr]) {
      if (capture instanceof FileCapture) capture.abandon();
      else capture.finish();
    }
    child.stdout?.destroy();
    child.stderr?.destroy();
    return new ExecdError('SPAWN_FAILED', `${child.lost}: the command's process group was killed`);
  }
  await drainAfterExit(
    { stdout: child.stdout, stderr: child.stderr, captureFds: Object.values(files).map((file) => file.fd), paused },
    pid,
    config.graceMs,
    deadline.fired.then(() => killed),
  );
  if (deadline.reason) await killed;
  deadline.dispose();
  const exit = { exitCode: rawExitCode, signal: rawSignal as string | null };
  const { exitCode, signal } = confinement ? confinedExit(exit, deadline.reason !== undefined) : exit;

  child.stdout?.destroy();
  child.stderr?.destroy();
  const leftover = !deadline.reason && groupAlive(pid);
  if (leftover) group.kind = 'leftover';
  else ctx.processes.untrack(group);

  // A leftover may still hold a capture file: it is held at the answered size while it lives.
  const writersAlive = leftover ? () => groupAlive(pid) : undefined;
  const stdoutResult = stdout.finish(writersAlive);
  const stderrResult = stderr.finish(writersAlive);
  const failed =
    confinement &&
    runnerFailure({
      exitCode,
      stdoutBytes: stdout.totalBytes,
      stderr: stderrResult.text,
      stderrTruncated: stderrResult.truncated,
    });
  // Nothing ran and nothing is left: the next start keeps the unit and its cgroup.
  if (failed && mayStartAgain && !leftover && !deadline.reason && lostMountRace(failed)) {
    hold?.drop();
    return START_AGAIN;
  }
  hold?.release();
  // What its resource limits did, read before its cgroup goes.
  const limitReport = unit === undefined ? {} : scopes.limitReport(ctx.sessionId, unit);
  // Gone unless something of the run still lives in it (until session close).
  if (unit !== undefined) scopes.release(ctx.sessionId, unit);
  ctx.onOutputBytes?.(stdout.totalBytes + stderr.totalBytes);
  if (failed) return sandboxUnavailable(confinement.mode, `the runner failed before the command ran: ${failed}`);
  return {
    exitCode,
    signal,
    timedOut: deadline.reason === 'timeout',
    aborted: deadline.reason === 'abort',
    ...(deadline.reason === 'abort' && ctx.signal?.reason === SHUTDOWN_ABORT && { daemonStopped: true as const }),
    timeoutMs: spec.timeoutMs,
    durationMs: Math.round(performance.now() - started),
    pid,
    stdout: stdoutResult,
    stderr: stderrResult,
    sandbox: sandboxReport(spec.sandboxPolicy.mode, confinement, denials?.denied ?? false),
    ...limitReport,
  };
}
