/**
 * Spawning the shell: the argv of the spec, unparsed, as the leader of its own process group, with
 * exactly the resolved environment.
 */
import { stat } from 'node:fs/promises';
import { execa, type ResultPromise } from 'execa';
import { ExecdError } from '../../protocol/errors.js';
import { PLATFORM } from '../../protocol/platform.js';
import type { ExecSpec } from '../../protocol/types.js';

/** A spawned shell process with piped stdout and stderr. */
export type ShellProcess = ResultPromise<{ buffer: false }>;

/** SPAWN_FAILED when the working directory is missing or not a directory. */
export async function checkWorkdir(workdir: string): Promise<ExecdError | undefined> {
  try {
    const info = await stat(workdir);
    return info.isDirectory() ? undefined : new ExecdError('SPAWN_FAILED', `workdir is not a directory: ${workdir}`);
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
  const child = execa(file!, args, {
    cwd: spec.workdir,
    env: spec.env,
    extendEnv: false,
    ...(stdin === undefined ? { stdin: 'ignore' as const } : { input: stdin }),
    // execa's types list only descriptors 3-9; at run time it hands any descriptor to spawn as is.
    ...(stdoutFd === undefined ? {} : { stdout: stdoutFd as 3 }),
    buffer: false,
    // POSIX: its own process group, so one signal reaches the whole tree (see platform.ts).
    detached: PLATFORM.spawnDetached,
    // The daemon kills trees itself, on every path; execa's exit hook would fight that.
    cleanup: false,
    reject: false,
    stripFinalNewline: false,
    windowsHide: true,
  });
  // Settlement is observed through the child's events; the promise itself must never go unhandled.
  child.catch(() => {});
  return child as ShellProcess;
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
