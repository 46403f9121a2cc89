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
 *   daemon, and the daemon sees the child through a `SpawnedChild`: its pid, its piped
 *   streams, and its 'spawn', 'error' and 'exit' events, like a `ChildProcess`.
 *
 * Killing needs neither: signals go to the process group by pid (kill.ts).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { Readable } from 'node:stream';
import { startChild } from './spawn-child.js';
import type { FromSpawner, PipeName, SpawnOrder, ToSpawner } from './spawn-messages.js';

/** A child process as runs and jobs see it, whichever process spawned it. */
export interface ShellChild extends EventEmitter {
  /** Set once spawned; undefined while spawning and when the spawn failed. */
  readonly pid?: number | undefined;
  /** The piped stdout; null when the child writes it into a descriptor of the daemon's. */
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
}

/** A child process spawned by a spawner process, as the daemon sees it. */
export class SpawnedChild extends EventEmitter {
  /** Set once spawned ('spawn' is emitted then); stays undefined when the spawn failed ('error'). */
  pid: number | undefined;
  /** The piped streams; null for one the child writes into its capture file. */
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  exited = false;

  constructor(files: SpawnOrder['files'], destroyPipe: (stream: PipeName) => void) {
    super();
    const pipe = (name: PipeName) => {
      const stream: Readable = new Readable({
        read() {},
        destroy(error, callback) {
          // Closes the real pipe too, so a leftover writer cannot keep it (and the spawner) busy.
          if (!stream.readableEnded) destroyPipe(name);
          callback(error);
        },
      });
      return stream;
    };
    this.stdout = files.stdout ? null : pipe('stdout');
    this.stderr = files.stderr ? null : pipe('stderr');
  }

  /** The piped stream of that name. */
  pipe(name: PipeName): Readable | null {
    return name === 'stdout' ? this.stdout : this.stderr;
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

/** A child of a spawner process, followed until it exited and its pipes closed. */
interface RemoteChild {
  child: SpawnedChild;
  spawner: SpawnerProcess;
  openPipes: number;
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
    const child = new SpawnedChild(order.files, (stream) => {
      if (this.children.has(id)) send(spawner, { t: 'destroy', id, stream });
    });
    this.children.set(id, { child, spawner, openPipes: Number(child.stdout !== null) + Number(child.stderr !== null) });
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
    process_.on('message', (message: FromSpawner) => this.receive(message));
    process_.on('error', () => {});
    process_.on('exit', () => this.lose(spawner));
    this.pool.push(spawner);
    return spawner;
  }

  private receive(message: FromSpawner): void {
    const entry = this.children.get(message.id);
    if (!entry) return;
    const { child } = entry;
    switch (message.t) {
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
      case 'data': {
        const pipe = child.pipe(message.stream);
        if (pipe && !pipe.destroyed)
          pipe.push(Buffer.from(message.chunk.buffer, message.chunk.byteOffset, message.chunk.byteLength));
        break;
      }
      case 'closed':
        entry.openPipes -= 1;
        this.endPipe(child.pipe(message.stream));
        this.forgetIfDone(message.id);
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

  private endPipe(pipe: Readable | null): void {
    if (pipe && !pipe.destroyed && !pipe.readableEnded) pipe.push(null);
  }

  /** A child is forgotten once it exited and its pipes closed. */
  private forgetIfDone(id: number): void {
    const entry = this.children.get(id);
    if (entry && entry.child.exited && entry.openPipes === 0) this.children.delete(id);
  }

  /**
   * A spawner process is gone (killed, or a bug): its children can no longer be followed, so each
   * is reported as failed to spawn or as exited and its run settles; the next spawn that needs a
   * spawner starts a new one.
   */
  private lose(spawner: SpawnerProcess): void {
    const index = this.pool.indexOf(spawner);
    if (index >= 0) this.pool.splice(index, 1);
    for (const [id, entry] of this.children) {
      if (entry.spawner !== spawner) continue;
      this.children.delete(id);
      const { child } = entry;
      this.endPipe(child.stdout);
      this.endPipe(child.stderr);
      if (child.pid === undefined) child.emit('error', new Error('the spawner process stopped'));
      else if (!child.exited) {
        child.exited = true;
        child.emit('exit', null, null);
      }
    }
  }
}

/** Sends a message to a spawner process, unless its channel is gone. */
function send(spawner: SpawnerProcess, message: ToSpawner): void {
  if (spawner.process.connected) spawner.process.send(message);
}
