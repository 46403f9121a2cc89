/**
 * The warm confined spawner of the Landlock runner (docs/sandbox-backends.md). Starting a confined command used to
 * start a Node process for it (landlock-launcher.ts: load koffi, restrict, exec the shell): ~100 ms
 * per command. Instead, one helper process per (session, effective policy) restricts itself once
 * (confined-worker.ts) and then forks every command of that policy: each is born inside the
 * Landlock domain, with no Node start of its own.
 *
 * - Shape: the daemon's spawner process (spawner.ts) — spawns on request, reports pid and exit,
 *   hands the command's pipes back as descriptors. It cannot open capture files (they live in the
 *   daemon's hidden state dir, and the helper is confined like its commands), so both streams of a
 *   command it starts are pipes the daemon reads.
 * - A spawn that arrives while the helper starts waits for its `ready`; a helper that answers
 *   `unconfinable` (or dies before it is ready) fails every waiting spawn with the reason, and the
 *   run or job fails closed (SANDBOX_UNAVAILABLE / `runnerFailed`): nothing runs unconfined.
 * - Cgroups: a confined helper cannot write `cgroup.procs`, so the daemon moves the helper into the
 *   unit's cgroup just before it sends the order and back once the helper answered it: the child
 *   is born in its unit's cgroup as with the daemon's spawner. Orders therefore go one at a time.
 * - A command of the same domain can signal the helper. SIGINT and SIGTERM it ignores; a SIGSTOP is
 *   undone by the SIGCONT the daemon sends with every order; a SIGKILL ends it: its children's groups
 *   are killed and their runs and jobs fail naming the cause, as with the daemon's spawner, and the
 *   next spawn of that policy starts a new helper.
 * - It ends HELPER_IDLE_MS after its last child ended (doubling like the other helpers, per policy),
 *   when its session closes, and when `session/update` changes the session's sandbox (`retire`):
 *   the next request of the narrower policy gets a helper of its own.
 */
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { IdleRelease } from '../host/idle-release.js';
import type { FromSpawner, PipeName, SpawnOrder, ToSpawner } from '../executor/spawn-messages.js';
import type { Spawner } from '../executor/spawner.js';
import {
  deliverAnswer,
  descriptorShortage,
  failedChild,
  forkSpawnerProcess,
  loseChild,
  pipeNames,
  SPAWN_ANSWER_TIMEOUT_MS,
  SpawnedChild,
  type ChildSpawner,
  type OrderedChild,
  type ShellChild,
} from '../executor/spawner-client.js';
import type { LandlockPlan } from './landlock-rules.js';

/** Daemon → confined spawner: first its plan, then the orders of the daemon's spawner. */
export type ToConfined = ToSpawner | { t: 'confine'; plan: LandlockPlan };

/** Confined spawner → daemon: restricted and ready (or why not), then a spawner's answers. */
export type FromConfined = FromSpawner | { t: 'ready'; abi: number } | { t: 'unconfinable'; reason: string };

/**
 * How often a helper with children is sent SIGCONT: a command of its domain may stop it, and a
 * stopped helper reports no exit.
 */
const CONTINUE_EVERY_MS = 500;

/** One spawn order of a confined spawner, from its request until its child exited. */
interface ConfinedChild extends OrderedChild {
  id: number;
  order: SpawnOrder;
  /** Fails the spawn when it is not answered in time (waiting for the helper included). */
  timer: NodeJS.Timeout | undefined;
}

/** One helper process: restricted to one plan, serving the spawns of one session's policy. */
class ConfinedHelper {
  readonly process: ChildProcess | undefined;
  private ready = false;
  /** Set once the helper is gone or let go: no spawn is sent to it any more. */
  private gone = false;
  /** Let go by the daemon: what still runs of it (kept jobs) is not killed when it exits. */
  private released = false;
  /** Orders not sent yet, in order (before `ready`, or while another is unanswered). */
  private readonly queue: ConfinedChild[] = [];
  /** The order sent and not answered yet: the helper is in its unit's cgroup meanwhile. */
  private inFlight: ConfinedChild | undefined;
  private readonly children = new Map<number, ConfinedChild>();
  private nextId = 1;
  /** Children spawned or being spawned that have not exited (nor failed to spawn). */
  live = 0;
  /** Continues the helper while it has children (see CONTINUE_EVERY_MS). */
  private continuing: NodeJS.Timeout | undefined;

  constructor(
    plan: LandlockPlan,
    private readonly onIdle: () => void,
    private readonly onGone: (helper: ConfinedHelper) => void,
  ) {
    this.process = forkSpawnerProcess<FromConfined>(
      new URL('./confined-worker.js', import.meta.url),
      'the confined spawner process',
      { message: (message, handle) => this.receive(message, handle), gone: (cause) => this.lose(cause) },
    );
    if (!this.process) {
      this.gone = true;
      return;
    }
    this.send({ t: 'confine', plan });
  }

  /** False once the helper is gone (died, refused, let go): a new one serves the next spawn. */
  get usable(): boolean {
    return !this.gone;
  }

  /** Queues a spawn; it is sent once the helper is ready and no other order is unanswered. */
  spawn(order: SpawnOrder, pipes: PipeName[]): SpawnedChild {
    const entry: ConfinedChild = {
      id: this.nextId++,
      child: new SpawnedChild(),
      order,
      pipes,
      timer: undefined,
      abandoned: false,
    };
    entry.timer = setTimeout(
      () => this.abandon(entry, `the confined spawner did not answer within ${SPAWN_ANSWER_TIMEOUT_MS} ms`),
      SPAWN_ANSWER_TIMEOUT_MS,
    );
    entry.timer.unref();
    this.children.set(entry.id, entry);
    this.queue.push(entry);
    if (this.live++ === 0) {
      this.continuing = setInterval(() => this.continueIt(), CONTINUE_EVERY_MS);
      this.continuing.unref();
    }
    let counted = true;
    const uncount = () => {
      if (counted && --this.live === 0) {
        clearInterval(this.continuing);
        this.onIdle();
      }
      counted = false;
    };
    entry.child.once('exit', uncount);
    entry.child.once('error', () => {
      if (entry.child.pid === undefined) uncount();
    });
    this.pump();
    return entry.child;
  }

  /** The pid of the helper process, while it runs. */
  get pid(): number | undefined {
    return this.gone ? undefined : this.process?.pid;
  }

  /** Children with these pids outlive the helper (a keepJobs shutdown). */
  keep(pids: number[]): void {
    this.send({ t: 'keep', pids });
  }

  /** Lets the helper go when it has no child left; returns whether it did. */
  releaseIfIdle(): boolean {
    if (this.live > 0 || this.gone) return false;
    this.close();
    return true;
  }

  /** Lets the helper go now: its channel closes, and it kills its children's groups and exits. */
  close(): void {
    if (this.gone) return;
    this.gone = true;
    this.released = true;
    clearInterval(this.continuing);
    this.onGone(this);
    if (this.process?.connected) this.process.disconnect();
  }

  /** Sends SIGCONT to the helper (undoes a SIGSTOP a command of its domain sent). */
  private continueIt(): void {
    if (this.gone || this.process?.pid === undefined) return;
    try {
      process.kill(this.process.pid, 'SIGCONT');
    } catch {
      // Gone: its exit is handled.
    }
  }

  private send(message: ToConfined): void {
    if (this.process?.connected) this.process.send(message);
  }

  /** Sends the next order, if the helper is ready and has none unanswered. */
  private pump(): void {
    while (this.ready && !this.gone && this.inFlight === undefined && this.queue.length > 0) {
      const entry = this.queue.shift()!;
      if (entry.abandoned) continue;
      const pid = this.process!.pid!;
      // A command of its domain may have stopped it; an order must not wait on that.
      this.continueIt();
      const { cgroup, ...order } = entry.order;
      if (cgroup) moveTo(cgroup.enter, pid);
      this.inFlight = entry;
      this.send({ t: 'spawn', id: entry.id, order });
    }
  }

  /** The helper answered the order in flight: it goes back to its own cgroup, the next is sent. */
  private answered(entry: ConfinedChild): void {
    if (entry.timer !== undefined) {
      clearTimeout(entry.timer);
      entry.timer = undefined;
    }
    if (this.inFlight !== entry) return;
    this.inFlight = undefined;
    if (entry.order.cgroup) moveTo(entry.order.cgroup.leave, this.process!.pid!);
    this.pump();
  }

  private receive(message: FromConfined, handle: Socket | undefined): void {
    if (message.t === 'ready') {
      this.ready = true;
      this.pump();
      return;
    }
    if (message.t === 'unconfinable') {
      // Worded as the launcher's failure was (`landlock: <reason>`).
      this.failWaiting(`landlock: the confined spawner could not restrict itself: ${message.reason}`);
      this.close();
      return;
    }
    if (message.t === 'memory') return;
    deliverAnswer(this.children, message, handle, (entry) => this.answered(entry));
  }

  /** Fails a spawn not answered in time; a child that starts after all is killed. */
  private abandon(entry: ConfinedChild, cause: string): void {
    if (entry.child.pid !== undefined || entry.abandoned) return;
    entry.abandoned = true;
    if (this.inFlight === entry) this.answered(entry);
    else {
      entry.timer = undefined;
      this.children.delete(entry.id);
    }
    entry.child.emit('error', new Error(cause));
  }

  /** Fails every spawn the helper has not answered. */
  private failWaiting(cause: string): void {
    for (const entry of [...this.queue, ...(this.inFlight ? [this.inFlight] : [])]) {
      if (entry.timer !== undefined) clearTimeout(entry.timer);
      entry.timer = undefined;
      this.children.delete(entry.id);
      if (!entry.abandoned) entry.child.emit('error', new Error(cause));
    }
    this.queue.length = 0;
    this.inFlight = undefined;
  }

  /**
   * The helper is gone: a spawn not answered fails; a running child's group is killed (its exit can
   * no longer be observed) and it reports `lost`, so its run or job fails naming the cause.
   */
  private lose(cause: string): void {
    clearInterval(this.continuing);
    this.failWaiting(cause);
    if (this.released) {
      this.children.clear();
      return;
    }
    for (const entry of this.children.values()) if (entry.child.pid !== undefined) loseChild(entry, cause);
    this.children.clear();
    if (!this.gone) {
      this.gone = true;
      this.onGone(this);
    }
  }
}

/** Writes `pid` into a `cgroup.procs`; a move that fails leaves the child uncontained, as spawn-child.ts does. */
function moveTo(procs: string, pid: number): void {
  try {
    writeFileSync(procs, String(pid));
  } catch {
    // The unit's cgroup is gone or not writable: its process group is still killed as always.
  }
}

/** The helper of one (session, policy) and its idle release, which outlives each helper (doubling). */
interface Slot {
  sessionId: string;
  plan: LandlockPlan;
  helper: ConfinedHelper | undefined;
  idle: IdleRelease;
}

/** The confined spawners of the daemon, one per (session, effective Landlock policy). */
export class ConfinedSpawners {
  private readonly slots = new Map<string, Slot>();

  /** `daemonSpawner`: counts the confined children among the daemon's live ones. */
  constructor(private readonly daemonSpawner?: Pick<Spawner, 'count'>) {}

  /** Helpers let go by `retire` that still have children. */
  private readonly retired = new Set<ConfinedHelper>();
  private closed = false;

  /** The spawner of a session's policy: its spawns go to the policy's helper, started on demand. */
  for(sessionId: string, plan: LandlockPlan): ChildSpawner {
    const key = `${sessionId}\0${JSON.stringify(plan)}`;
    let slot = this.slots.get(key);
    if (!slot) {
      const created: Slot = {
        sessionId,
        plan,
        helper: undefined,
        idle: new IdleRelease(() => created.helper?.releaseIfIdle() ?? false),
      };
      slot = created;
      this.slots.set(key, slot);
    }
    const chosen = slot;
    return { spawn: (order, keepFree = 0) => this.spawn(chosen, order, keepFree) };
  }

  private spawn(slot: Slot, order: SpawnOrder, keepFree: number): ShellChild {
    if (this.closed) return failedChild(new Error('the daemon is shutting down'));
    const pipes = pipeNames(order);
    const short = descriptorShortage(pipes, 0, keepFree);
    if (short) return short;
    slot.idle.cancel();
    if (!slot.helper?.usable) {
      slot.helper = new ConfinedHelper(
        slot.plan,
        () => slot.idle.idle(),
        (gone) => {
          if (slot.helper === gone) slot.helper = undefined;
          this.retired.delete(gone);
        },
      );
      if (!slot.helper.usable) {
        slot.helper = undefined;
        return failedChild(new Error('the confined spawner process could not be started'));
      }
    }
    const child = slot.helper.spawn(order, pipes);
    this.daemonSpawner?.count(child);
    return child;
  }

  /**
   * The session's sandbox changed (narrowed), or the session closes: its helpers take no new spawn
   * and end once their last child has; the next request starts a helper of the policy it runs.
   */
  retire(sessionId: string): void {
    for (const [key, slot] of this.slots) {
      if (slot.sessionId !== sessionId) continue;
      this.slots.delete(key);
      slot.idle.cancel();
      const helper = slot.helper;
      if (!helper || helper.releaseIfIdle()) continue;
      // Let go once its children are gone (the onIdle of a slot no longer in the table).
      this.retired.add(helper);
      slot.idle = new IdleRelease(() => helper.releaseIfIdle(), 0);
    }
  }

  /** The pids of the helper processes running now. */
  pids(): number[] {
    const helpers = [...[...this.slots.values()].map((slot) => slot.helper), ...this.retired];
    return helpers.flatMap((helper) => (helper?.pid === undefined ? [] : [helper.pid]));
  }

  /** Children with these pids outlive the helpers (a keepJobs shutdown): sent before `close`. */
  keep(pids: number[]): void {
    if (pids.length === 0) return;
    for (const slot of this.slots.values()) slot.helper?.keep(pids);
    for (const helper of this.retired) helper.keep(pids);
  }

  /** Lets every helper go (at shutdown, once every process tree is gone). */
  close(): void {
    this.closed = true;
    for (const slot of this.slots.values()) {
      slot.idle.cancel();
      slot.helper?.close();
    }
    for (const helper of [...this.retired]) helper.close();
    this.slots.clear();
  }
}
