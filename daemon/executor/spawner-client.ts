/**
 * The daemon's side of a spawner process, shared by the daemon's own spawners (spawner.ts) and the
 * confined spawners of the Landlock runner (../sandbox/confined-spawner.ts): both fork a small
 * Node process that serves spawn orders (spawn-service.ts), and both see each child it starts
 * through a `SpawnedChild` whose pipes come back as descriptors. What they share is here: the
 * fork, the descriptors a spawn needs free, how an answer about a child reaches the child the
 * daemon sees, and what a child becomes when its spawner process dies.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { hasSpareDescriptors } from '../../spill/fd-headroom.js';
import { signalGroup } from '../processes/group-signals.js';
import type { FromSpawner, PipeName, SpawnOrder } from './spawn-messages.js';

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

/** Whatever starts a run's or job's child: the daemon's spawner, or a session's confined spawner. */
export interface ChildSpawner {
  /** Starts a child; watch its 'spawn', 'error' and 'exit' events (see `Spawner.spawn`). */
  spawn(order: SpawnOrder, keepFree?: number): ShellChild;
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

/** How long a spawner process may take to answer a spawn before the spawn fails. */
export const SPAWN_ANSWER_TIMEOUT_MS = 30_000;

/**
 * Descriptors the daemon keeps free beyond the pipes it is about to receive: its other work
 * (capture files, the journal, an accepted connection) goes on needing a few meanwhile.
 */
const DESCRIPTOR_MARGIN = 2;

/** The streams of an order that come as pipes: those without a capture file. */
export function pipeNames(order: SpawnOrder): PipeName[] {
  return (['stdout', 'stderr'] as const).filter((name) => order.files[name] === undefined);
}

/** A child that never started: it emits 'error' on the next turn, like a failed `spawn`. */
export function failedChild(error: Error): ShellChild {
  const child = Object.assign(new EventEmitter(), { pid: undefined, stdout: null, stderr: null });
  process.nextTick(() => child.emit('error', error));
  return child;
}

/**
 * A failed child when the daemon has too few descriptors free to receive `pipes` (with those of
 * spawns still on their way, `inFlight`, and `keepFree` more): out of descriptors, the kernel
 * drops a passed descriptor the receiver has no slot for. Undefined when the spawn may go on.
 */
export function descriptorShortage(pipes: PipeName[], inFlight: number, keepFree: number): ShellChild | undefined {
  const needed = pipes.length + inFlight + DESCRIPTOR_MARGIN + keepFree;
  if (pipes.length === 0 || hasSpareDescriptors(needed)) return undefined;
  return failedChild(new Error(`fewer than ${needed} file descriptors free in the daemon for its pipes`));
}

/** What a spawner process's owner hears from it. */
export interface SpawnerProcessEvents<Message> {
  message(message: Message, handle: Socket | undefined): void;
  /** It died (or its channel closed) and every message it sent was read: `cause` names how. */
  gone(cause: string): void;
}

/**
 * Forks a spawner process running `script` (its own environment is only PATH: every child gets its
 * resolved one); undefined when it cannot be started (no descriptor or process left). `name`
 * starts the cause its death is reported with.
 */
export function forkSpawnerProcess<Message>(
  script: URL,
  name: string,
  events: SpawnerProcessEvents<Message>,
): ChildProcess | undefined {
  let child: ChildProcess;
  try {
    child = fork(script, [], {
      serialization: 'advanced',
      env: { PATH: process.env.PATH ?? '' },
      execArgv: [],
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
  } catch {
    return undefined;
  }
  // A fork that failed (EMFILE, EAGAIN) has no pid, no channel and will never exit: spawns sent to
  // it would wait forever. Its 'error' comes on the next turn.
  if (child.pid === undefined) {
    child.on('error', () => {});
    return undefined;
  }
  // Never what keeps the daemon alive: the listening socket and running work do that.
  child.unref();
  child.channel?.unref();
  child.on('message', (message: Message, handle?: Socket) => events.message(message, handle));
  child.on('error', () => {});
  // Its children are given up only once its exit is known and every message it sent was read.
  child.once('exit', (code, signal) => {
    const cause = `${name} died (${signal ?? `exit code ${code}`})`;
    if (child.connected) child.once('disconnect', () => events.gone(cause));
    else events.gone(cause);
  });
  return child;
}

/** One spawn order as its spawner client follows it, from the order until its child exited. */
export interface OrderedChild {
  child: SpawnedChild;
  /** The streams that come as pipes (those without a capture file). */
  pipes: PipeName[];
  /** Set when the spawn failed before the spawner answered it: a child that comes later is killed. */
  abandoned: boolean;
}

/**
 * Delivers a spawner's answer about one order of `orders` to the child the daemon sees: its pipes,
 * its pid ('spawn'), its failure ('error') or its exit; an order the client no longer follows has
 * the pipe it came with closed. `answered` is called when the spawner answered the order ('spawned'
 * or 'error'). An order is forgotten once failed or exited. A child whose spawn was already
 * abandoned, or whose pipe the daemon could not receive, has its group killed: nobody could follow it.
 */
export function deliverAnswer<Order extends OrderedChild>(
  orders: Map<number, Order>,
  message: Exclude<FromSpawner, { t: 'memory' }>,
  handle: Socket | undefined,
  answered: (entry: Order) => void,
): void {
  const entry = orders.get(message.id);
  if (!entry) {
    handle?.destroy();
    return;
  }
  const forget = () => orders.delete(message.id);
  const { child } = entry;
  switch (message.t) {
    case 'pipe':
      if (handle && !entry.abandoned) child.adopt(message.stream, handle);
      else handle?.destroy();
      break;
    case 'spawned':
      answered(entry);
      if (entry.abandoned) {
        // Its spawn already failed: nobody follows this child, so its group goes now.
        signalGroup(message.pid, 'SIGKILL');
        break;
      }
      if (entry.pipes.some((name) => child[name] === null)) {
        // A pipe the daemon had no descriptor free to receive was dropped: the child's output
        // could not be read, so it does not run at all.
        signalGroup(message.pid, 'SIGKILL');
        forget();
        failChild(child, 'its output pipe could not be received (no file descriptor free in the daemon)');
        break;
      }
      child.pid = message.pid;
      child.emit('spawn');
      break;
    case 'error':
      answered(entry);
      forget();
      if (!entry.abandoned) child.emit('error', new Error(message.message));
      break;
    case 'exit':
      forget();
      if (entry.abandoned) break;
      child.exited = true;
      // One read of the channel can carry 'spawned' and 'exit' together: as with a ChildProcess,
      // 'exit' comes a turn later, once whoever awaited the spawn is listening.
      setImmediate(() => child.emit('exit', message.code, message.signal));
      break;
  }
}

/** Fails a spawn whose child is gone (killed): its pipes are closed. */
function failChild(child: SpawnedChild, cause: string): void {
  child.stdout?.destroy();
  child.stderr?.destroy();
  child.emit('error', new Error(cause));
}

/**
 * A child of a spawner process that died: a spawn not answered fails; a running child's group is
 * killed (its exit can no longer be observed) and it reports `lost`, so its run or job fails
 * naming the cause.
 */
export function loseChild(entry: OrderedChild, cause: string): void {
  const { child } = entry;
  if (entry.abandoned) return;
  if (child.pid === undefined) child.emit('error', new Error(cause));
  else if (!child.exited) {
    child.exited = true;
    child.lost = cause;
    signalGroup(child.pid, 'SIGKILL');
    child.emit('exit', null, 'SIGKILL');
  }
}
