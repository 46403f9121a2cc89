/**
 * What a spawner process does (spawn-worker.ts, and the confined spawner's confined-worker.ts once
 * restricted): runs `child_process.spawn` for the daemon and reports each child's pid and exit over
 * its IPC channel. It is small, so its forks are cheap, and the daemon's own address
 * space — large, and busy serving other clients — is never copied while it is busy (see
 * spawner.ts).
 *
 * It never reads a child's output: each pipe is handed over to the daemon as a descriptor, so the
 * daemon reads it (and stops reading it, which stops the writer) exactly as if it had spawned the
 * child itself, and this process holds no output whatever the child writes.
 *
 * It outlives no daemon: when the channel closes (the daemon exited or was killed), every process
 * group it started is killed and it exits, so nothing is left behind.
 */
import type { ChildProcess } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import type { Socket } from 'node:net';
import { readMemoryUse } from '../../shared/proc.js';
import { signalGroup } from '../processes/group-signals.js';
import { startChild } from './spawn-child.js';
import type { FromSpawner, PipeName, SpawnOrder, ToSpawner } from './spawn-messages.js';

const children = new Map<number, ChildProcess>();

/** Sends a message to the daemon, unless the channel is gone. */
export function post(message: FromSpawner): void {
  if (process.connected) process.send?.(message);
}

/**
 * Hands one pipe of a child over to the daemon; this process's copy of the descriptor is closed
 * once the daemon has received it. Messages after it are delivered after it, in order.
 */
function handOver(id: number, child: ChildProcess, stream: PipeName): void {
  const pipe = child[stream] as Socket | null;
  if (!pipe) return;
  pipe.on('error', () => {});
  neverRead(pipe);
  if (process.connected) process.send?.({ t: 'pipe', id, stream } satisfies FromSpawner, pipe, {}, () => {});
}

/**
 * Keeps this process from reading a pipe before it is handed over. Node starts reading a child's
 * pipe as soon as it is created, and a handle waits in the channel's queue until the daemon has
 * acknowledged the previous one: bytes read meanwhile would stay here and be lost. Stopping the
 * read in the tick of the spawn (before the event loop could read anything) and making any later
 * start (Node resumes a child's pipes when it exits) a no-op leaves every byte in the pipe for the
 * daemon. Uses the socket's handle: Node has no public way to stop a socket's reads.
 */
function neverRead(pipe: Socket): void {
  const handle = (pipe as unknown as { _handle?: { readStop?: () => number; reading?: boolean } })._handle;
  handle?.readStop?.();
  if (handle) handle.reading = false;
  pipe._read = () => {};
}

/**
 * The order's capture files opened here by path (the daemon's descriptors mean nothing in this
 * process); undefined, with nothing left open, when one cannot be opened.
 */
function openFiles(files: SpawnOrder['files']): SpawnOrder['files'] | undefined {
  const opened: SpawnOrder['files'] = {};
  try {
    for (const stream of ['stdout', 'stderr'] as const) {
      const target = files[stream];
      // Never through a symlink swapped in since the daemon created the file.
      if (target)
        opened[stream] = { path: target.path, fd: openSync(target.path, constants.O_RDWR | constants.O_NOFOLLOW) };
    }
    return opened;
  } catch {
    closeFiles(opened);
    return undefined;
  }
}

function closeFiles(files: SpawnOrder['files']): void {
  for (const target of Object.values(files)) closeSync(target.fd);
}

/** Spawns one order; its streams go into the capture files the daemon created, or pipes. */
function start(id: number, order: SpawnOrder): void {
  const files = openFiles(order.files);
  if (!files) {
    post({ t: 'error', id, message: 'cannot open the capture files' });
    return;
  }
  let child: ChildProcess;
  try {
    child = startChild({ ...order, files });
  } catch (error) {
    // `spawn` throws for arguments it refuses: report a failed spawn rather than end this process.
    closeFiles(files);
    post({ t: 'error', id, message: error instanceof Error ? error.message : String(error) });
    return;
  }
  // The child holds its own copies of the descriptors now.
  closeFiles(files);
  if (child.pid === undefined) {
    child.once('error', (error) => post({ t: 'error', id, message: error.message }));
    return;
  }
  children.set(id, child);
  handOver(id, child, 'stdout');
  handOver(id, child, 'stderr');
  post({ t: 'spawned', id, pid: child.pid });
  child.on('exit', (code, signal) => {
    children.delete(id);
    post({ t: 'exit', id, code, signal });
  });
}

/**
 * Serves the daemon's orders on this process's channel: spawn orders, questions about this
 * process's memory (the daemon cannot read it: non-dumpable), and before a keepJobs shutdown the
 * children that must outlive this process. Messages of other kinds are left to other listeners.
 */
export function serveSpawns(): void {
  // A confined spawner's channel also carries its 'confine' (confined-worker.ts handles it).
  process.on('message', (message: ToSpawner | { t: 'confine' }) => {
    if (message.t === 'spawn') start(message.id, message.order);
    else if (message.t === 'memory') post({ t: 'memory', id: message.id, use: readMemoryUse(process.pid) ?? null });
    else if (message.t === 'keep')
      for (const [id, child] of children) if (message.pids.includes(child.pid!)) children.delete(id);
  });
}

/**
 * Signals meant for the daemon (a terminal's Ctrl-C reaches the whole group) are the daemon's to
 * act on: it kills the trees it owns and then closes the channel, which ends this process and every
 * group it started.
 */
export function endWithTheChannel(): void {
  process.on('SIGINT', () => {});
  process.on('SIGTERM', () => {});
  process.once('disconnect', () => {
    for (const child of children.values()) signalGroup(child.pid!, 'SIGKILL');
    process.exit(0);
  });
}
