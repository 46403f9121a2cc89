/**
 * The one `child_process.spawn` call of the daemon's runs and jobs, made in the daemon or in a
 * spawner process alike (see spawner.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, writeFileSync } from 'node:fs';
import type { CgroupTarget, SpawnOrder } from './spawn-messages.js';

/**
 * Spawns an order's child. A spawn failure arrives as the child's 'error' event while its pid is
 * undefined; any later 'error' (a failed kill) is swallowed rather than left unhandled.
 */
export function startChild(order: SpawnOrder): ChildProcess {
  // The daemon holds the FIFO's writer open, so this open does not block.
  const stdinFd = order.stdinPath === undefined ? undefined : openSync(order.stdinPath, 'r');
  const child = spawnWithin(order.cgroup, () =>
    spawn(order.file, order.args, {
      cwd: order.cwd,
      env: order.env,
      stdio: [
        stdinFd ?? (order.stdin === undefined ? 'ignore' : 'pipe'),
        order.files.stdout?.fd ?? 'pipe',
        order.files.stderr?.fd ?? 'pipe',
      ],
      detached: order.detached,
      windowsHide: true,
    }),
  );
  if (stdinFd !== undefined) closeSync(stdinFd);
  child.on('error', () => {});
  if (order.stdin !== undefined && child.stdin) {
    // A command that exits without reading its input closes the pipe early: EPIPE is no error.
    child.stdin.on('error', () => {});
    child.stdin.end(order.stdin);
  }
  return child;
}

/**
 * Moves the calling process into `target`'s cgroup for the synchronous `spawn`, so that the child
 * is born there, and back. A move into the scope's cgroup that fails leaves the child where the
 * caller is (its process group is still killed as always); one into a cgroup of its resource
 * limits (`also`) throws instead, before the spawn: a limited command never runs unlimited.
 */
export function spawnWithin<T>(target: CgroupTarget | undefined, spawn: () => T): T {
  if (!target) return spawn();
  const entered: string[] = [];
  const leaveAll = () => {
    for (const leave of entered.reverse()) {
      try {
        writeFileSync(leave, String(process.pid));
      } catch {
        // Cannot happen while the daemon may write its own cgroup; the next spawn moves it again.
      }
    }
  };
  try {
    writeFileSync(target.enter, String(process.pid));
    entered.push(target.leave);
  } catch {
    // The unit's cgroup is gone or not writable: the child is not contained.
  }
  for (const { enter, leave } of target.also ?? []) {
    try {
      writeFileSync(enter, String(process.pid));
      entered.push(leave);
    } catch (error) {
      leaveAll();
      throw new Error(`cannot enter the command's limit cgroup ${enter}: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
  try {
    return spawn();
  } finally {
    leaveAll();
  }
}
