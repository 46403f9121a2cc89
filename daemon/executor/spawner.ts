/**
 * Spawning without stalling the daemon. `child_process.spawn` blocks until the child has exec'd —
 * about 10 ms per shell on these machines, far longer under load — and every fork copies the
 * daemon's page tables and write-protects its memory, so a burst of starts in the daemon would
 * stall every other client's reads and answers for seconds. (Spawning on threads of the daemon
 * was tried: the forks still stall the whole address space, 140 ms a spawn in a burst of 100.)
 *
 * - While no other child of the daemon is alive, nothing is waiting for the daemon: the spawn runs
 *   right there, without a hop.
 * - Otherwise it goes to the spawner process (spawn-worker.ts), small and started with the daemon,
 *   and the daemon sees the child through a `SpawnedChild`: its pid, its piped streams, and its
 *   'spawn', 'error' and 'exit' events, like a `ChildProcess`.
 *
 * Killing needs neither: signals go to the process group by pid (kill.ts).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { Readable } from 'node:stream';
import { startChild } from './spawn-child.js';
import type { FromSpawner, PipeName, SpawnOrder, ToSpawner } from './spawn-messages.js';

/** A child process as runs and jobs see it, whichever thread spawned it. */
export interface ShellChild extends EventEmitter {
  /** Set once spawned; undefined while spawning and when the spawn failed. */
  readonly pid?: number | undefined;
  /** The piped stdout; null when the child writes it into a descriptor of the daemon's. */
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
}

/** Spawner threads: spawns on different threads overlap their waits for exec. */
const POOL_SIZE = 2;

/** A child process spawned by a spawner thread, as the daemon's loop sees it. */
export class SpawnedChild extends EventEmitter {
  /** Set once spawned ('spawn' is emitted then); stays undefined when the spawn failed ('error'). */
  pid: number | undefined;
  /** The piped stdout, or null when the child writes it into a descriptor of the daemon's. */
  readonly stdout: Readable | null;
  readonly stderr: Readable;
  exited = false;

  constructor(pipedStdout: boolean, destroyPipe: (stream: PipeName) => void) {
    super();
    const pipe = (name: PipeName) => {
      const stream: Readable = new Readable({
        read() {},
        destroy(error, callback) {
          // Closes the real pipe too, so a leftover writer cannot keep it (and the thread) busy.
          if (!stream.readableEnded) destroyPipe(name);
          callback(error);
        },
      });
      return stream;
    };
    this.stdout = pipedStdout ? pipe('stdout') : null;
    this.stderr = pipe('stderr');
  }

  /** The piped stream of that name. */
  pipe(name: PipeName): Readable | null {
    return name === 'stdout' ? this.stdout : this.stderr;
  }
}

/** Where the daemon's children are spawned: in the daemon itself or in the spawner process. */
export class Spawner {
  private process: ChildProcess | undefined;
  /** Children of the spawner process being followed: until they exited and their pipes closed. */
  private readonly children = new Map<number, { child: SpawnedChild; openPipes: number }>();
  private nextId = 1;
  /** Children spawned or being spawned that have not exited (nor failed to spawn). */
  private live = 0;
  /** Spawns made in the daemon and in the spawner process, since start. */
  readonly counts = { inline: 0, spawner: 0 };
  private closed = false;

  /** Starts the spawner process ahead of need, so that no spawn waits for it to boot. */
  start(): void {
    this.ensureProcess();
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

  /** Lets the spawner process go (at shutdown, once every process tree is gone). */
  close(): void {
    this.closed = true;
    if (this.process?.connected) this.process.disconnect();
    this.process = undefined;
  }

  private spawnRemote(order: SpawnOrder): SpawnedChild {
    const spawner = this.ensureProcess();
    const id = this.nextId++;
    const child = new SpawnedChild(order.stdoutPath === undefined, (stream) => {
      if (this.children.has(id)) this.send({ t: 'destroy', id, stream });
    });
    this.children.set(id, { child, openPipes: child.stdout ? 2 : 1 });
    // The daemon's descriptor means nothing in another process: the spawner opens the path.
    const { stdoutFd: _daemonFd, ...portable } = order;
    this.send({ t: 'spawn', id, order: portable }, spawner);
    return child;
  }

  private send(message: ToSpawner, spawner = this.process): void {
    if (spawner?.connected) spawner.send(message);
  }

  private ensureProcess(): ChildProcess {
    if (this.process) return this.process;
    const spawner = fork(new URL('./spawn-worker.js', import.meta.url), [], {
      serialization: 'advanced',
      // Its own environment matters to nobody: every child gets its resolved one.
      env: { PATH: process.env.PATH ?? '' },
      execArgv: [],
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    // Never what keeps the daemon alive: the listening socket and running work do that.
    spawner.unref();
    spawner.channel?.unref();
    spawner.on('message', (message: FromSpawner) => this.receive(message));
    spawner.on('error', () => {});
    spawner.on('exit', () => this.lose(spawner));
    this.process = spawner;
    return spawner;
  }

  private receive(message: FromSpawner): void {
    const entry = this.children.get(message.id);
    if (!entry) return;
    const { child } = entry;
    switch (message.t) {
      case 'spawned':
        child.pid = message.pid;
        child.emit('spawn');
        break;
      case 'error':
        this.children.delete(message.id);
        child.emit('error', new Error(message.message));
        break;
      case 'data': {
        const pipe = child.pipe(message.stream);
        if (pipe && !pipe.destroyed) pipe.push(Buffer.from(message.chunk.buffer, message.chunk.byteOffset, message.chunk.byteLength));
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
   * The spawner process is gone (killed, or a bug): its children can no longer be followed, so
   * each is reported as failed to spawn or as exited and its run settles; the next spawn that
   * needs the spawner starts a new one.
   */
  private lose(spawner: ChildProcess): void {
    if (this.process === spawner) this.process = undefined;
    for (const [id, { child }] of this.children) {
      this.children.delete(id);
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
