/**
 * Spawning without stalling the daemon. `child_process.spawn` blocks until the child has exec'd —
 * about 10 ms per shell on these machines, far longer under load — and every fork copies the
 * daemon's page tables and write-protects its memory, so a burst of starts in the daemon would
 * stall every other client's reads and answers for seconds. (Spawning on threads of the daemon
 * was tried: the forks still stall the whole address space, 140 ms a spawn in a burst of 100.)
 *
 * - While no other child of the daemon is alive, nothing is waiting for the daemon: the spawn runs
 *   right there, without a hop.
 * - Otherwise it goes to a spawner process (spawn-worker.ts), small and started with the
 *   daemon, and the daemon sees the child through a `SpawnedChild`: its pid, its pipes (handed
 *   over as descriptors, so no output passes through the spawner and back-pressure is the
 *   kernel's), and its 'spawn', 'error' and 'exit' events, like a `ChildProcess`.
 *
 * Killing needs neither: signals go to the process group by pid (kill.ts). When a spawner process
 * dies (killed, out of memory), the exits of its children can no longer be observed: their
 * groups are killed, their runs and jobs fail naming the cause, and a new spawner is started.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { signalGroup } from './kill.js';
import { startChild } from './spawn-child.js';
import type { FromSpawner, PipeName, SpawnOrder, ToSpawner } from './spawn-messages.js';

/** A child process as runs and jobs see it, whichever process spawned it. */
export interface ShellChild extends EventEmitter {
  /** Set once spawned; undefined while spawning and when the spawn failed. */
  readonly pid?: number | undefined;
  /** The piped stdout; null when the child writes it into a descriptor of the daemon's. */
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  /** Set when the child's exit could not be observed (its spawner process died): the cause. */
  readonly lost?: string | undefined;
}

/** A child process spawned by a spawner process, as the daemon sees it. */
export class SpawnedChild extends EventEmitter {
  /** Set once spawned ('spawn' is emitted then); stays undefined when the spawn failed ('error'). */
  pid: number | undefined;
  /**
   * The piped streams: the pipes themselves, handed over by the spawner before 'spawn'; null for
   * one the child writes into its capture file.
   */
  stdout: Socket | null = null;
  stderr: Socket | null = null;
  exited = false;
  /**
   * Set when the spawner process died while the child ran: the child's exit can no longer be
   * observed, so its group was killed and 'exit' reports this instead of a real status.
   */
  lost: string | undefined;

  /** Takes over a pipe the spawner handed over. */
  adopt(name: PipeName, pipe: Socket): void {
    // A read-only pipe end: ending our side would fail, and a failure of it only ends the stream.
    pipe.on('error', () => {});
    this[name] = pipe;
  }
}

/**
 * Spawner processes. One leaves a core to the daemon during a burst of starts: measured on two
 * cores, two spawners took B3 (16 clients × 100 runs) from 0.88× to 1.12× the in-process rate, but
 * B4's reads during the burst of 100 job starts from a p50 of 37–55 ms to 53–173 ms.
 */
const POOL_SIZE = 1;

/** One spawner process and the spawns it has not answered yet. */
interface SpawnerProcess {
  process: ChildProcess;
  pending: number;
}

/** A child of a spawner process, followed until it exited. */
interface RemoteChild {
  child: SpawnedChild;
  spawner: SpawnerProcess;
}

/** Where the daemon's children are spawned: in the daemon itself or by its spawner processes. */
export class Spawner {
  private readonly pool: SpawnerProcess[] = [];
  private readonly children = new Map<number, RemoteChild>();
  private nextId = 1;
  /** Children spawned or being spawned that have not exited (nor failed to spawn). */
  private live = 0;
  /** Spawns made in the daemon and by the spawner processes, since start. */
  readonly counts = { inline: 0, spawner: 0 };
  private closed = false;

  /** Starts the spawner processes ahead of need, so that no spawn waits for one to boot. */
  start(): void {
    while (this.pool.length < POOL_SIZE) this.startProcess();
  }

  /** Starts a child; watch its 'spawn', 'error' and 'exit' events. */
  spawn(order: SpawnOrder): ShellChild {
    const inline = this.live === 0 || this.closed;
    const child = inline ? startChild(order) : this.spawnRemote(order);
    this.counts[inline ? 'inline' : 'spawner'] += 1;
    this.live += 1;
    let counted = true;
    const uncount = () => {
      if (counted) this.live -= 1;
      counted = false;
    };
    child.once('exit', uncount);
    child.once('error', () => {
      if (child.pid === undefined) uncount();
    });
    return child;
  }

  /** Lets the spawner processes go (at shutdown, once every process tree is gone). */
  close(): void {
    this.closed = true;
    for (const { process } of this.pool.splice(0)) if (process.connected) process.disconnect();
  }

  private spawnRemote(order: SpawnOrder): SpawnedChild {
    const spawner = this.leastBusy();
    const id = this.nextId++;
    const child = new SpawnedChild();
    this.children.set(id, { child, spawner });
    spawner.pending += 1;
    send(spawner, { t: 'spawn', id, order });
    return child;
  }

  private leastBusy(): SpawnerProcess {
    if (this.pool.length < POOL_SIZE) this.startProcess();
    return this.pool.reduce((best, spawner) => (spawner.pending < best.pending ? spawner : best));
  }

  private startProcess(): SpawnerProcess {
    const process_ = fork(new URL('./spawn-worker.js', import.meta.url), [], {
      serialization: 'advanced',
      // Its own environment matters to nobody: every child gets its resolved one.
      env: { PATH: process.env.PATH ?? '' },
      execArgv: [],
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    const spawner: SpawnerProcess = { process: process_, pending: 0 };
    // Never what keeps the daemon alive: the listening socket and running work do that.
    process_.unref();
    process_.channel?.unref();
    process_.on('message', (message: FromSpawner, handle?: Socket) => this.receive(message, handle));
    process_.on('error', () => {});
    // Its children are given up only once its exit is known and every message it sent was read.
    process_.once('exit', (code, signal) => {
      const cause = `spawner process died (${signal ?? `exit code ${code}`})`;
      if (process_.connected) process_.once('disconnect', () => this.lose(spawner, cause));
      else this.lose(spawner, cause);
    });
    this.pool.push(spawner);
    return spawner;
  }

  private receive(message: FromSpawner, handle: Socket | undefined): void {
    const entry = this.children.get(message.id);
    if (!entry) {
      handle?.destroy();
      return;
    }
    const { child } = entry;
    switch (message.t) {
      case 'pipe':
        if (handle) child.adopt(message.stream, handle);
        break;
      case 'spawned':
        entry.spawner.pending -= 1;
        child.pid = message.pid;
        child.emit('spawn');
        break;
      case 'error':
        entry.spawner.pending -= 1;
        this.children.delete(message.id);
        child.emit('error', new Error(message.message));
        break;
      case 'exit':
        child.exited = true;
        // One read of the channel can carry 'spawned' and 'exit' together: as with a ChildProcess,
        // 'exit' comes a turn later, once whoever awaited the spawn is listening.
        setImmediate(() => child.emit('exit', message.code, message.signal));
        this.forgetIfDone(message.id);
        break;
    }
  }

  /** A child is forgotten once it exited (its pipes are the daemon's own). */
  private forgetIfDone(id: number): void {
    if (this.children.get(id)?.child.exited) this.children.delete(id);
  }

  /**
   * A spawner process is gone (killed, out of memory, a bug): the exits of its children can no
   * longer be observed. A child still spawning fails to spawn; a running child's group is killed
   * (nothing could tell when it ends) and it reports `lost`, so its run or job fails naming the
   * cause. A new spawner is started for later spawns.
   */
  private lose(spawner: SpawnerProcess, cause: string): void {
    const index = this.pool.indexOf(spawner);
    if (index < 0) return;
    this.pool.splice(index, 1);
    for (const [id, entry] of this.children) {
      if (entry.spawner !== spawner) continue;
      this.children.delete(id);
      const { child } = entry;
      if (child.pid === undefined) child.emit('error', new Error(cause));
      else if (!child.exited) {
        child.exited = true;
        child.lost = cause;
        signalGroup(child.pid, 'SIGKILL');
        child.emit('exit', null, 'SIGKILL');
      }
    }
    if (!this.closed) this.start();
  }
}

/** Sends a message to a spawner process, unless its channel is gone. */
function send(spawner: SpawnerProcess, message: ToSpawner): void {
  if (spawner.process.connected) spawner.process.send(message);
}
