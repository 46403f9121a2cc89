/**
 * Spawning without stalling the daemon. `child_process.spawn` blocks until the child has exec'd —
 * about 10 ms per shell on these machines, far longer under load — and every fork copies the
 * daemon's page tables and write-protects its memory, so a burst of starts in the daemon would
 * stall every other client's reads and answers for seconds. (Spawning on threads of the daemon
 * was tried: the forks still stall the whole address space, 140 ms a spawn in a burst of 100.)
 *
 * - While no other child of the daemon is alive, nothing is waiting for the daemon: the spawn runs
 *   right there, without a hop.
 * - Otherwise it goes to a spawner process (spawn-worker.ts), small, started when the daemon's
 *   first child is and let go HELPER_IDLE_MS after the last child ended (an idle daemon keeps
 *   none: B10). The daemon sees the child through a
 *   `SpawnedChild`: its pid, its pipes (handed over as descriptors, so no output passes through
 *   the spawner and back-pressure is the kernel's), and its 'spawn', 'error' and 'exit' events,
 *   like a `ChildProcess`.
 *
 * Out of file descriptors, a pipe handed over cannot be received (the kernel drops a passed
 * descriptor the receiver has no slot for, and Node's retries of it can end the spawner), so a
 * spawn that needs pipes starts only while the daemon has descriptors to spare for them, for the
 * pipes still on their way and a margin (a job, which holds its pipes as long as it runs, leaves
 * JOB_DESCRIPTOR_RESERVE more for runs); otherwise it fails at once (SPAWN_FAILED). A spawn whose
 * pipe was dropped nonetheless fails the same way and its child's group is killed; a spawner
 * process that cannot be started leaves every spawn inline until one can; and a spawner that
 * answers no spawn within SPAWN_ANSWER_TIMEOUT_MS has it failed (its child killed if it comes
 * later).
 *
 * Killing needs neither: signals go to the process group by pid (../processes/group-signals.ts). When a spawner process
 * dies (killed, out of memory), the exits of its children can no longer be observed: their
 * groups are killed, their runs and jobs fail naming the cause, and a new spawner is started.
 */
import type { ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import type { MemoryUse } from '../../shared/proc.js';
import { IdleRelease } from '../host/idle-release.js';
import { startChild } from './spawn-child.js';
import type { FromSpawner, PipeName, SpawnOrder, ToSpawner } from './spawn-messages.js';
import {
  deliverAnswer,
  descriptorShortage,
  forkSpawnerProcess,
  loseChild,
  pipeNames,
  SPAWN_ANSWER_TIMEOUT_MS,
  SpawnedChild,
  type ChildSpawner,
  type OrderedChild,
  type ShellChild,
} from './spawner-client.js';

/**
 * Spawner processes. One leaves a core to the daemon during a burst of starts: measured on two
 * cores, two spawners took B3 (16 clients × 100 runs) from 0.88× to 1.12× the in-process rate, but
 * B4's reads during the burst of 100 job starts from a p50 of 37–55 ms to 53–173 ms.
 */
const POOL_SIZE = 1;

/** How long a spawner process may take to report its memory use. */
const MEMORY_ANSWER_TIMEOUT_MS = 1_000;

/**
 * Descriptors a background job's spawn leaves free beyond its own: its pipes stay open as long as
 * it runs, so jobs alone must not take the last descriptors a foreground run needs.
 */
export const JOB_DESCRIPTOR_RESERVE = 4;

/** One spawner process and the spawns it has not answered yet. */
interface SpawnerProcess {
  process: ChildProcess;
  pending: number;
}

/** A child of a spawner process, followed until it exited. */
interface RemoteChild extends OrderedChild {
  spawner: SpawnerProcess;
  /** Fails the spawn when the spawner does not answer it in time. */
  timer: NodeJS.Timeout | undefined;
}

/** Where the daemon's children are spawned: in the daemon itself or by its spawner processes. */
export class Spawner implements ChildSpawner {
  private readonly pool: SpawnerProcess[] = [];
  private readonly children = new Map<number, RemoteChild>();
  private nextId = 1;
  /** Pipes of remote spawns not answered yet: descriptors the daemon is about to receive. */
  private pipesInFlight = 0;
  /** Children spawned or being spawned that have not exited (nor failed to spawn). */
  private live = 0;
  /** Spawns made in the daemon and by the spawner processes, since start. */
  readonly counts = { inline: 0, spawner: 0 };
  private closed = false;
  /** Lets the spawner processes go once the daemon had no child for HELPER_IDLE_MS. */
  private readonly idleRelease = new IdleRelease(() => {
    // A spawner still has children (a job handed over, not yet counted out): keep them all.
    if (this.live > 0 || this.children.size > 0 || this.pool.length === 0) return false;
    // Out of the pool first: their exits are then no loss (see `lose`).
    for (const { process } of this.pool.splice(0)) if (process.connected) process.disconnect();
    return true;
  });
  /** Memory questions sent to spawner processes, by id, until answered or timed out. */
  private readonly memoryQuestions = new Map<number, (use: MemoryUse | undefined) => void>();

  /** Starts the spawner processes ahead of need, so that no spawn waits for one to boot. */
  start(): void {
    while (this.pool.length < POOL_SIZE) if (!this.startProcess()) return;
  }

  /**
   * Starts a child; watch its 'spawn', 'error' and 'exit' events. `keepFree`: descriptors that must
   * stay free once its pipes are open.
   */
  spawn(order: SpawnOrder, keepFree = 0): ShellChild {
    const pipes = pipeNames(order);
    const short = descriptorShortage(pipes, this.pipesInFlight, keepFree);
    if (short) return short;
    this.idleRelease.cancel();
    const spawner = this.live === 0 || this.closed ? undefined : this.leastBusy();
    const inline = spawner === undefined;
    const child = spawner ? this.spawnRemote(spawner, order, pipes) : startChild(order);
    // A daemon that never runs two children at once never needs a spawner process; the first
    // child boots it, so that the next spawn while this one lives does not wait for it.
    if (inline && !this.closed) this.start();
    this.counts[inline ? 'inline' : 'spawner'] += 1;
    this.count(child);
    return child;
  }

  /**
   * Counts a child among the daemon's live ones until it exits (or fails to spawn): one of this
   * spawner's, or one a confined spawner started, whose output the daemon reads all the same —
   * while it lives, the next spawn goes to a spawner process rather than forking the daemon.
   */
  count(child: ShellChild): void {
    this.idleRelease.cancel();
    this.live += 1;
    let counted = true;
    const uncount = () => {
      if (counted && --this.live === 0) this.idleRelease.idle();
      counted = false;
    };
    child.once('exit', uncount);
    child.once('error', () => {
      if (child.pid === undefined) uncount();
    });
  }

  /** The pids of the spawner processes running now. */
  pids(): number[] {
    return this.pool.flatMap(({ process }) => (process.pid === undefined ? [] : [process.pid]));
  }

  /**
   * The memory of each spawner process, as it reads its own: the daemon cannot read the smaps of a
   * non-dumpable process unless it is root. One that does not answer within a second is left out.
   */
  async memoryUse(): Promise<MemoryUse[]> {
    const answers = this.pool.map(
      (spawner) =>
        new Promise<MemoryUse | undefined>((resolve) => {
          const id = this.nextId++;
          const timer = setTimeout(() => answer(undefined), MEMORY_ANSWER_TIMEOUT_MS);
          const answer = (use: MemoryUse | undefined) => {
            clearTimeout(timer);
            this.memoryQuestions.delete(id);
            resolve(use);
          };
          this.memoryQuestions.set(id, answer);
          if (spawner.process.connected) send(spawner, { t: 'memory', id });
          else answer(undefined);
        }),
    );
    return (await Promise.all(answers)).filter((use) => use !== undefined);
  }

  /**
   * The children with these pids outlive the spawner processes (a `keepJobs` shutdown): sent
   * before `close`, on the same channel, so each spawner knows before it sees the channel close.
   */
  keep(pids: number[]): void {
    if (pids.length === 0) return;
    for (const spawner of this.pool) send(spawner, { t: 'keep', pids });
  }

  /** Lets the spawner processes go (at shutdown, once every process tree is gone). */
  close(): void {
    this.closed = true;
    this.idleRelease.cancel();
    for (const { process } of this.pool.splice(0)) if (process.connected) process.disconnect();
  }

  private spawnRemote(spawner: SpawnerProcess, order: SpawnOrder, pipes: PipeName[]): SpawnedChild {
    const id = this.nextId++;
    const child = new SpawnedChild();
    const timer = setTimeout(
      () => this.abandon(id, `the spawner process did not answer within ${SPAWN_ANSWER_TIMEOUT_MS} ms`),
      SPAWN_ANSWER_TIMEOUT_MS,
    );
    timer.unref();
    this.children.set(id, { child, spawner, pipes, timer, abandoned: false });
    this.pipesInFlight += pipes.length;
    spawner.pending += 1;
    send(spawner, { t: 'spawn', id, order });
    return child;
  }

  private leastBusy(): SpawnerProcess | undefined {
    if (this.pool.length < POOL_SIZE) this.startProcess();
    if (this.pool.length === 0) return undefined;
    return this.pool.reduce((best, spawner) => (spawner.pending < best.pending ? spawner : best));
  }

  /** Starts a spawner process; undefined when it cannot be started (no descriptor or process left). */
  private startProcess(): SpawnerProcess | undefined {
    let spawner: SpawnerProcess | undefined;
    const script = new URL('./spawn-worker.js', import.meta.url);
    const process_ = forkSpawnerProcess<FromSpawner>(script, 'spawner process', {
      message: (message, handle) => this.receive(message, handle),
      gone: (cause) => spawner && this.lose(spawner, cause),
    });
    if (!process_) return undefined;
    spawner = { process: process_, pending: 0 };
    this.pool.push(spawner);
    return spawner;
  }

  private receive(message: FromSpawner, handle: Socket | undefined): void {
    if (message.t === 'memory') {
      this.memoryQuestions.get(message.id)?.(message.use ?? undefined);
      return;
    }
    deliverAnswer(this.children, message, handle, (entry) => this.answered(entry));
  }

  /** The spawner answered a spawn (or gave it up): it is no longer pending nor awaited. */
  private answered(entry: RemoteChild): void {
    if (entry.timer === undefined) return;
    clearTimeout(entry.timer);
    entry.timer = undefined;
    entry.spawner.pending -= 1;
    this.pipesInFlight -= entry.pipes.length;
  }

  /**
   * Fails a spawn the spawner has not answered in time; the entry stays until the spawner answers,
   * so that a child that starts after all is killed.
   */
  private abandon(id: number, cause: string): void {
    const entry = this.children.get(id);
    if (!entry || entry.child.pid !== undefined) return;
    this.answered(entry);
    entry.abandoned = true;
    entry.child.emit('error', new Error(cause));
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
      this.answered(entry);
      loseChild(entry, cause);
    }
    if (!this.closed) this.start();
  }
}

/** Sends a message to a spawner process, unless its channel is gone. */
function send(spawner: SpawnerProcess, message: ToSpawner): void {
  if (spawner.process.connected) spawner.process.send(message);
}
