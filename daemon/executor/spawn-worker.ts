/**
 * The spawner process: runs `child_process.spawn` for the daemon and relays each child's events and
 * piped output back over its IPC channel. It is small, so its forks are cheap, and the daemon's
 * own address space — large, and busy serving other clients — is never copied while it is busy
 * (see spawner.ts).
 *
 * It outlives no daemon: when the channel closes (the daemon exited or was killed), every process
 * group it started is killed and it exits, so nothing is left behind.
 */
import type { ChildProcess } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import { signalGroup } from './kill.js';
import { startChild } from './spawn-child.js';
import type { FromSpawner, PipeName, SpawnOrder, ToSpawner } from './spawn-messages.js';

const children = new Map<number, ChildProcess>();

function post(message: FromSpawner): void {
  process.send?.(message);
}

/** Relays one pipe of a child until it closes. */
function relay(id: number, child: ChildProcess, stream: PipeName): void {
  const pipe = child[stream];
  if (!pipe) return;
  pipe.on('data', (chunk: Buffer) => post({ t: 'data', id, stream, chunk }));
  pipe.on('error', () => {});
  pipe.on('close', () => post({ t: 'closed', id, stream }));
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
  post({ t: 'spawned', id, pid: child.pid });
  relay(id, child, 'stdout');
  relay(id, child, 'stderr');
  child.on('exit', (code, signal) => post({ t: 'exit', id, code, signal }));
  child.on('close', () => children.delete(id));
}

process.on('message', (message: ToSpawner) => {
  if (message.t === 'spawn') start(message.id, message.order);
  else children.get(message.id)?.[message.stream]?.destroy();
});

// Signals meant for the daemon (a terminal's Ctrl-C reaches the whole group) are the daemon's to
// act on: it kills the trees it owns and then closes the channel.
process.on('SIGINT', () => {});
process.on('SIGTERM', () => {});
process.on('disconnect', () => {
  for (const child of children.values()) signalGroup(child.pid!, 'SIGKILL');
  process.exit(0);
});
