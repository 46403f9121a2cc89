/**
 * An upgrade in place (`daemon/upgrade`, docs/deployment.md): the daemon replaces its program with
 * the one at its path now (a package updated in place is picked up) by `execve`, under the same
 * pid, so a container's init keeps its child and the running jobs stay the daemon's children.
 *
 * First, nothing changes until the new program has shown it loads (`--version` in a child) and
 * every descriptor to hand over is copied: any failure there answers UPGRADE_FAILED and the daemon
 * serves on as before. Then, as a shutdown that keeps its jobs: the listeners stop accepting (their
 * sockets stay bound: a client connecting meanwhile waits in the kernel's backlog for the new
 * program), in-flight runs are aborted and answered, running jobs are journaled `kept` (a confined
 * job's output pipes are detached for the new program, job-pipes.ts), terminals end (a
 * PTY master dies with the program), journals are flushed and closed, and the spawner processes
 * end — the daemon reaps their orphans (PR_SET_CHILD_SUBREAPER), so every kept job is then its
 * direct child, whose exit status the new program reaps (upgrade/children.ts). Last, the answer
 * is flushed, the copies of the listeners and pipes and stdio lose close-on-exec, the handover
 * file names them, and the process execs.
 */
import { execFile } from 'node:child_process';
import { linkSync, renameSync, rmSync } from 'node:fs';
import type { Server } from 'node:net';
import { ExecdError } from '../../protocol/errors.js';
import { holderOf } from '../../shared/lock-file.js';
import type { DaemonContext } from '../context.js';
import type { Job } from '../jobs/job.js';
import type { ClientConnection } from '../net/connection.js';
import { SHUTDOWN_ABORT } from '../executor/deadline.js';
import { endTheRest, killBound, keepRunningJobs, loggedSteps, type ShutdownParts } from '../shutdown.js';
import { HANDOVER_ENV, handoverPath, writeHandover, type HandedListener } from './handover.js';
import type { HandedPipe } from '../jobs/job-pipes.js';
import { closeFd, duplicate, execProgram, libc, setChildSubreaper, setCloseOnExec } from '../host/libc.js';

/** The detail of a terminal an upgrade in place ended. */
export const TERMINALS_END_AT_UPGRADE = 'the daemon was upgraded in place (terminals do not survive it)';
/** How long the new program's `--version` may take. */
const PROBE_TIMEOUT_MS = 30_000;
/** How long the answers get to reach their clients, and the spawners to exit. */
const FLUSH_WAIT_MS = 1_000;

/** What the exec needs once the daemon is ready for it. */
export interface PreparedUpgrade {
  /** The program (node) and its argv: the same command line as this daemon's. */
  execPath: string;
  argv: string[];
  /** The new program's version, from its `--version`. */
  version: string;
  /** The script the new program runs (the `execd` entry at this daemon's path). */
  program: string;
  listeners: HandedListener[];
  /** The pipes of kept confined jobs, found while winding down. */
  pipes: HandedPipe[];
  handover: string;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** Runs the program at this daemon's path with `--version`: its version, or why it does not load. */
function probeProgram(execPath: string, args: string[]): Promise<string | ExecdError> {
  return new Promise((resolve) => {
    execFile(execPath, [...args, '--version'], { timeout: PROBE_TIMEOUT_MS, encoding: 'utf8' }, (error, stdout) => {
      const version = /^execd (\S+)$/m.exec(stdout)?.[1];
      if (error || version === undefined) {
        const why = error ? error.message.split('\n')[0] : `it printed ${JSON.stringify(stdout.slice(0, 80))}`;
        resolve(new ExecdError('UPGRADE_FAILED', `the new program does not start (${args.at(-1)}): ${why}`));
      } else resolve(version);
    });
  });
}

/** The descriptor of a listening server (Node keeps it on the server's handle). */
function serverFd(server: Server): number | undefined {
  const fd = (server as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : undefined;
}

/** Copies each listener's descriptor for the new program; closes the copies and says why on a failure. */
function copyListeners(parts: ShutdownParts): HandedListener[] | ExecdError {
  const copies: HandedListener[] = [];
  const wanted: Array<{ server: Server; make: (fd: number) => HandedListener }> = [];
  if (parts.listener)
    wanted.push({
      server: parts.listener.server,
      make: (fd) => ({ kind: 'socket', fd, path: parts.context.socketPath }),
    });
  for (const [index, server] of (parts.network?.servers ?? []).entries())
    wanted.push({ server, make: (fd) => ({ kind: 'network', fd, url: parts.network!.urls[index]! }) });
  for (const { server, make } of wanted) {
    const fd = serverFd(server);
    const copy = fd === undefined ? 'the listener has no descriptor' : duplicate(fd);
    if (typeof copy === 'string') {
      for (const made of copies) closeFd(made.fd);
      return new ExecdError('UPGRADE_FAILED', `cannot hand a listener over: ${copy}`);
    }
    copies.push(make(copy));
  }
  return copies;
}

/**
 * Checks that the upgrade can happen and readies what it hands over, changing nothing the daemon
 * serves with: the prepared exec, or UPGRADE_FAILED with the reason.
 */
export async function prepareUpgrade(parts: ShutdownParts): Promise<PreparedUpgrade | ExecdError> {
  const c = libc();
  if (typeof c === 'string') return new ExecdError('UPGRADE_FAILED', c);
  const program = process.argv[1];
  if (program === undefined) return new ExecdError('UPGRADE_FAILED', 'this daemon has no program path to exec');
  const args = [...process.execArgv, program];
  const version = await probeProgram(process.execPath, args);
  if (version instanceof ExecdError) return version;
  const listeners = copyListeners(parts);
  if (listeners instanceof ExecdError) return listeners;
  const handover = handoverPath(parts.context.stateDir);
  try {
    writeHandover(handover, {
      holder: holderOf(process.pid),
      fromVersion: parts.context.version,
      listeners,
      pipes: [],
    });
  } catch (error) {
    for (const listener of listeners) closeFd(listener.fd);
    return new ExecdError('UPGRADE_FAILED', `cannot write the handover file: ${(error as Error).message}`);
  }
  return {
    execPath: process.execPath,
    argv: [process.execPath, ...args, ...process.argv.slice(2)],
    version,
    program,
    listeners,
    pipes: [],
    handover,
  };
}

/**
 * Stops a server accepting while its socket stays bound and reachable: Node unlinks a Unix
 * socket's path when it closes the server, so the path is linked aside first and put back in the
 * same turn (a connect finds it missing for microseconds at most).
 */
function stopAccepting(server: Server, socketPath: string | undefined): void {
  if (socketPath === undefined) {
    server.close();
    return;
  }
  const aside = `${socketPath}.upgrade`;
  rmSync(aside, { force: true });
  linkSync(socketPath, aside);
  server.close();
  renameSync(aside, socketPath);
}

/**
 * Ends what does not cross the exec, keeping the jobs (see the module's comment); never rejects,
 * a failed step is logged and the next runs.
 */
export async function windDown(
  parts: ShutdownParts,
  caller: ClientConnection,
  prepared: PreparedUpgrade,
): Promise<void> {
  const { context } = parts;
  const { log } = context;
  const step = loggedSteps(log, 'upgrade');
  context.shuttingDown = true;
  log.info('upgrading in place');
  await step('stop accepting', () => {
    if (parts.listener)
      stopAccepting(parts.listener.server, context.platform.socketIsFile ? context.socketPath : undefined);
    for (const server of parts.network?.servers ?? []) stopAccepting(server, undefined);
  });
  await step('stop the timers', () => parts.stopTimers());
  const graceMs = context.config.get().graceMs;
  await step('abort runs', () => context.runs.abortWhere(() => true, SHUTDOWN_ABORT), killBound(graceMs));
  await step(
    'keep jobs',
    async () => {
      // A job whose output the daemon reads is kept when its pipes can be handed over.
      const detach = (job: Job): boolean => {
        const pipes = job.detachPipes?.();
        job.detachPipes = undefined;
        if (pipes === undefined) return false;
        if (typeof pipes === 'string') {
          log.warn({ jobId: job.id, reason: pipes }, 'the pipes of a job cannot be handed over: it ends with them');
          return false;
        }
        prepared.pipes.push(...pipes.map((pipe) => ({ jobId: job.id, ...pipe })));
        return true;
      };
      const kept = await keepRunningJobs(context, graceMs, detach);
      // A job an earlier upgrade handed over reads its pipes into its logs itself: they go on too.
      for (const job of kept) if (job.detachPipes) detach(job);
      log.info(
        { kept: kept.map((job) => job.id), pipes: prepared.pipes.length },
        'running jobs kept across the upgrade',
      );
    },
    killBound(graceMs),
  );
  await endTheRest(step, context, parts.runJournal, TERMINALS_END_AT_UPGRADE);
  await step('close the observability listener and the audit log', () => parts.observability?.close());
  await step('stop the sweep', () => parts.spill.stop());
  // The spawners' children (kept jobs among them) become the daemon's own when the spawners exit.
  await step('reap the spawners orphans', () => {
    const refused = setChildSubreaper(true);
    if (refused) log.warn({ reason: refused }, 'jobs a spawner started will read lost after the upgrade');
  });
  const helpers = [...context.spawner.pids(), ...context.confinedSpawners.pids()];
  await step('close the spawners', () => {
    context.spawner.close();
    context.confinedSpawners.close();
  });
  await step('wait for the spawners', () => waitGone(helpers), FLUSH_WAIT_MS * 3);
  await step('end the pattern thread', () => context.regex.close());
  // Every other answer, then the caller's, reaches its client before the exec closes them.
  const open = [...parts.connections].filter((conn) => conn !== caller);
  await step('flush answers', () =>
    Promise.race([Promise.all(open.map((conn) => conn.answered())), delay(FLUSH_WAIT_MS)]),
  );
  await step('close connections', () => open.forEach((conn) => conn.close()));
}

/** Resolves once none of `pids` is alive any more (they are reaped by libuv: the daemon's children). */
async function waitGone(pids: number[]): Promise<void> {
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  while (pids.some(alive)) await delay(10);
}

/** Closes the caller's connection once its answer is flushed. */
export async function flushCaller(caller: ClientConnection): Promise<void> {
  await Promise.race([caller.answered(), delay(FLUSH_WAIT_MS)]);
  caller.close();
  await Promise.race([caller.gone, delay(FLUSH_WAIT_MS)]);
}

/** Execs the new program with the handed-over descriptors; returns only on failure, with the reason. */
export function execNewProgram(prepared: PreparedUpgrade, context: DaemonContext): string {
  try {
    writeHandover(prepared.handover, {
      holder: holderOf(process.pid),
      fromVersion: context.version,
      listeners: prepared.listeners,
      pipes: prepared.pipes,
    });
  } catch (error) {
    return `cannot write the handover file: ${(error as Error).message}`;
  }
  const handed = [...prepared.listeners.map((listener) => listener.fd), ...prepared.pipes.map((pipe) => pipe.fd)];
  for (const fd of [0, 1, 2, ...handed]) {
    const refused = setCloseOnExec(fd, false);
    if (refused) return refused;
  }
  const env = Object.fromEntries(
    Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
  env[HANDOVER_ENV] = prepared.handover;
  context.log.info({ version: prepared.version, program: prepared.program }, 'exec');
  const failure = execProgram(prepared.execPath, prepared.argv, env);
  // Still this program: the file names descriptors nobody will take.
  rmSync(prepared.handover, { force: true });
  return failure;
}
