/**
 * Spawning the shell: the argv of the spec, unparsed, as the leader of its own process group, with
 * exactly the resolved environment.
 *
 * This is the hot path of every run, so it calls `child_process.spawn` directly: execa's wrapping
 * (option normalisation, stream and promise plumbing) cost 2–3 ms per run on these machines, while
 * the daemon needs none of it — it captures, kills and settles processes itself.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { statSync } from 'node:fs';
import { ExecdError } from '../../protocol/errors.js';
import { PLATFORM } from '../../protocol/platform.js';
import type { ExecSpec } from '../../protocol/types.js';

/** A spawned shell process; stderr is always a pipe, stdout a pipe unless it goes to a file. */
export type ShellProcess = ChildProcess;

/**
 * SPAWN_FAILED when the working directory is missing or not a directory. Synchronous: the spawn
 * right after it blocks the event loop far longer, and a thread-pool round trip cost ~0.5 ms a run.
 */
export function checkWorkdir(workdir: string): ExecdError | undefined {
  try {
    return statSync(workdir).isDirectory() ? undefined : new ExecdError('SPAWN_FAILED', `workdir is not a directory: ${workdir}`);
  } catch {
    return new ExecdError('SPAWN_FAILED', `workdir does not exist: ${workdir}`);
  }
}

/**
 * Starts `spec.argv` (or `argv`, when a sandbox runner wraps it). stdin is `/dev/null` unless a
 * string is given, which is written and closed. stdout is a pipe, or the file descriptor
 * `stdoutFd` when the child writes its output straight into a capture file.
 */
export function spawnShell(spec: ExecSpec, stdin: string | undefined, argv: string[] = spec.argv, stdoutFd?: number): ShellProcess {
  const [file, ...args] = argv;
  const child = spawn(file!, args, {
    cwd: spec.workdir,
    env: spec.env,
    stdio: [stdin === undefined ? 'ignore' : 'pipe', stdoutFd ?? 'pipe', 'pipe'],
    // POSIX: its own process group, so one signal reaches the whole tree (see platform.ts).
    detached: PLATFORM.spawnDetached,
    windowsHide: true,
  });
  // A spawn failure is reported through `spawned`; any later 'error' (a failed kill) must not be
  // an unhandled event that takes the daemon down.
  child.on('error', () => {});
  if (stdin !== undefined && child.stdin) {
    // A command that exits without reading its input closes the pipe early: EPIPE is no error.
    child.stdin.on('error', () => {});
    child.stdin.end(stdin);
  }
  return child;
}

/** Resolves undefined once spawned, or with SPAWN_FAILED when the shell could not start. */
export function spawned(child: ShellProcess, file: string): Promise<ExecdError | undefined> {
  return new Promise((resolve) => {
    if (child.pid !== undefined) {
      resolve(undefined);
      return;
    }
    child.once('spawn', () => resolve(undefined));
    child.once('error', (error) => resolve(new ExecdError('SPAWN_FAILED', `cannot start ${file}: ${error.message}`)));
  });
}
