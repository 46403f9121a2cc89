/**
 * The confined spawner process (docs/sandbox-backends.md, see confined-spawners.ts): a spawner process that, told
 * its plan by the first message on its channel, restricts itself — the launcher's own step
 * (`restrict` in landlock-launcher.ts: the Landlock ruleset, `PR_SET_NO_NEW_PRIVS`, the seccomp
 * filter) — and only then serves spawn orders like the daemon's spawner (spawn-service.ts). Every
 * child it forks is born inside the domain: no Node start, no restriction of its own.
 *
 * It is non-dumpable before it reads a single order (they hold the commands' environments; a
 * command of its domain, same uid, could otherwise ptrace it). When it cannot be made so, or the
 * restriction fails, or the restriction does not hold (the first hidden directory still readable),
 * it answers `unconfinable` with the reason and exits: the daemon fails its spawns closed.
 */
import type { LandlockPlan } from './landlock-rules.js';
import { makeNonDumpable } from '../host/non-dumpable.js';
import { endWithTheChannel, serveSpawns } from '../executor/spawn-service.js';
import { LaunchError, loadLibc, restrictChecked } from './landlock-launcher.js';
import type { FromConfined, ToConfined } from './confined-spawner.js';

const dumpable = makeNonDumpable();
endWithTheChannel();

function send(message: FromConfined): void {
  if (process.connected) process.send?.(message);
}

/** Restricts this process to `plan` and checks that it holds; the ABI, or throws why not. */
function confine(plan: LandlockPlan): number {
  if (dumpable !== undefined) throw new LaunchError(`cannot make the confined spawner non-dumpable: ${dumpable}`);
  return restrictChecked(loadLibc(), plan);
}

let confined = false;
process.on('message', (message: ToConfined) => {
  if (message.t !== 'confine' || confined) return;
  confined = true;
  let abi: number;
  try {
    abi = confine(message.plan);
  } catch (error) {
    const reason = error instanceof LaunchError ? error.message : `unexpected failure: ${(error as Error).message}`;
    // Nothing is spawned by a process that is not restricted: it reports and leaves.
    if (process.connected) process.send?.({ t: 'unconfinable', reason } satisfies FromConfined, () => process.exit(1));
    else process.exit(1);
    return;
  }
  serveSpawns();
  send({ t: 'ready', abi });
});
