/**
 * Spawning the shell: the argv of the spec, unparsed, as the leader of its own process group, with
 * exactly the resolved environment.
 *
 * This is the hot path of every run, so the spawner calls `child_process.spawn` directly: execa's
 * wrapping (option normalisation, stream and promise plumbing) cost 2–3 ms per run on
 * these machines, while the daemon needs none of it — it captures, kills and settles processes
 * itself.
 */
import { statSync } from 'node:fs';
import { ExecdError } from '../../protocol/errors.js';
import { PLATFORM } from '../../protocol/platform.js';
import type { ExecSpec } from '../../protocol/types.js';
import type { CgroupTarget, SpawnOrder } from './spawn-messages.js';
import { failedChild, type ChildSpawner, type ShellChild } from './spawner-client.js';

/** A spawned shell process; stderr is always a pipe, stdout a pipe unless it goes to a file. */
export type ShellProcess = ShellChild;

/**
 * SPAWN_FAILED when the working directory is missing or not a directory. Synchronous: a stat of a
 * local directory takes microseconds, where a thread-pool round trip cost ~0.5 ms a run.
 */
export function checkWorkdir(workdir: string): ExecdError | undefined {
  try {
    return statSync(workdir).isDirectory()
      ? undefined
      : new ExecdError('SPAWN_FAILED', `workdir is not a directory: ${workdir}`);
  } catch {
    return new ExecdError('SPAWN_FAILED', `workdir does not exist: ${workdir}`);
  }
}

/**
 * Starts `spec.argv` (or `argv`, when a sandbox runner wraps it) through the spawner. stdin is
 * `/dev/null` unless a string is given, which is written and closed. stdout and stderr are pipes,
 * or the capture files in `files` that the child writes straight into. `keepFree`: descriptors the
 * daemon must still have free once the pipes are open (see spawner.ts). `cgroup`: the unit's cgroup
 * the child is born in (process-scopes.ts).
 */
export function spawnShell(
  spawner: ChildSpawner,
  spec: ExecSpec,
  stdin: string | undefined,
  argv: string[] = spec.argv,
  files: SpawnOrder['files'] = {},
  stdinPath?: string,
  keepFree = 0,
  cgroup?: CgroupTarget,
): ShellProcess {
  const [file, ...args] = argv;
  try {
    return spawnOrder(spawner, file!, args, spec, stdin, files, stdinPath, keepFree, cgroup);
  } catch (error) {
    // `spawn` throws for arguments it refuses (a NUL byte, …): a failed spawn, never an exception.
    return failedChild(error instanceof Error ? error : new Error(String(error)));
  }
}

function spawnOrder(
  spawner: ChildSpawner,
  file: string,
  args: string[],
  spec: ExecSpec,
  stdin: string | undefined,
  files: SpawnOrder['files'],
  stdinPath: string | undefined,
  keepFree: number,
  cgroup: CgroupTarget | undefined,
): ShellProcess {
  return spawner.spawn(
    {
      file,
      args,
      cwd: spec.workdir,
      env: spec.env,
      ...(stdin === undefined ? {} : { stdin }),
      ...(stdinPath === undefined ? {} : { stdinPath }),
      files,
      // POSIX: its own process group, so one signal reaches the whole tree (see platform.ts).
      detached: PLATFORM.spawnDetached,
      ...(cgroup && { cgroup }),
    },
    keepFree,
  );
}

/** Resolves undefined once spawned, or with SPAWN_FAILED when the shell could not start. */
export function spawned(child: ShellProcess, file: string): Promise<ExecdError | undefined> {
  return new Promise((resolve) => {
    if (child.pid !== undefined) {
      resolve(undefined);
      return;
    }
    child.once('spawn', () => resolve(undefined));
    child.once('error', (error: Error) =>
      resolve(new ExecdError('SPAWN_FAILED', `cannot start ${file}: ${error.message}`)),
    );
  });
}
