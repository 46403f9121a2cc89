/**
 * The messages between the daemon and its spawner process (see spawner.ts), sent over the IPC
 * channel with the 'advanced' (structured clone) serialization, so output chunks stay bytes.
 */

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
}

/** Which piped stream a message is about. */
export type PipeName = 'stdout' | 'stderr';

/** A capture file: open in the daemon as `fd` (a spawner process opens it again by `path`). */
export interface CaptureTarget {
  fd: number;
  path: string;
}

/** Daemon → spawner. */
export type ToSpawner =
  | { t: 'spawn'; id: number; order: SpawnOrder }
  /** Stop reading a pipe and close it (the run is over; a leftover writer gets EPIPE). */
  | { t: 'destroy'; id: number; stream: PipeName };

/** Spawner → daemon. */
export type FromSpawner =
  | { t: 'spawned'; id: number; pid: number }
  | { t: 'error'; id: number; message: string }
  | { t: 'data'; id: number; stream: PipeName; chunk: Uint8Array }
  /** The pipe reached its end or was closed. */
  | { t: 'closed'; id: number; stream: PipeName }
  | { t: 'exit'; id: number; code: number | null; signal: string | null };
