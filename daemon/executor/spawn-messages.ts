/**
 * The messages between the daemon and its spawner process (see spawner.ts), sent over the IPC
 * channel. No output passes through it: a child's pipes are handed over to the daemon as
 * descriptors (the 'pipe' message carries the pipe's socket as its handle).
 */

import type { MemoryUse } from '../../shared/proc.js';

/** Everything `child_process.spawn` needs for one shell, resolved by the daemon. */
export interface SpawnOrder {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /** Written to the child's stdin, which is then closed; `/dev/null` when absent. */
  stdin?: string;
  /** A FIFO the child reads as its stdin (a job whose stdin stays open); opened by whoever spawns. */
  stdinPath?: string;
  /** Capture files the child writes a stream into; a pipe relayed back for a stream without one. */
  files: Partial<Record<PipeName, CaptureTarget>>;
  detached: boolean;
  /** The cgroup the child is born in (its unit's, see process-scopes.ts). */
  cgroup?: CgroupTarget;
}

/** The cgroup a child is spawned into: the unit's `cgroup.procs`, and the spawner's own to return to. */
export interface CgroupTarget {
  /** The unit's `cgroup.procs`, written with the spawning process's pid just before the fork. */
  enter: string;
  /** The spawning process's own `cgroup.procs`, written right after it. */
  leave: string;
  /** The unit's cgroups in the other hierarchies its resource limits use (cgroup v1), entered the same way. */
  also?: Array<{ enter: string; leave: string }>;
}

/** Which piped stream a message is about. */
export type PipeName = 'stdout' | 'stderr';

/** A capture file: open in the daemon as `fd` (a spawner process opens it again by `path`). */
export interface CaptureTarget {
  fd: number;
  path: string;
}

/**
 * Daemon → spawner. 'memory' asks for its memory use, which only it can read (it is non-dumpable);
 * `keep`: the children with these pids outlive the spawner (a `keepJobs` shutdown): their groups
 * are not killed when the channel closes.
 */
export type ToSpawner =
  { t: 'spawn'; id: number; order: SpawnOrder } | { t: 'memory'; id: number } | { t: 'keep'; pids: number[] };

/** Spawner → daemon. */
export type FromSpawner =
  /** Sent with the pipe's socket as the message's handle, before 'spawned'. */
  | { t: 'pipe'; id: number; stream: PipeName }
  | { t: 'spawned'; id: number; pid: number }
  | { t: 'error'; id: number; message: string }
  | { t: 'exit'; id: number; code: number | null; signal: string | null }
  /** The answer to 'memory' of the same id: null without /proc. */
  | { t: 'memory'; id: number; use: MemoryUse | null };
