/**
 * The sandbox runner of this daemon: bubblewrap or Landlock, chosen and probed once at start-up
 * (docs/sandbox.md, docs/sandbox-backends.md). A confined mode is only ever run through a runner that the probe showed
 * working; otherwise it fails closed with SANDBOX_UNAVAILABLE and nothing runs. Landlock's probe
 * (a launcher process) does not hold up the daemon's start: until it answers, `initialize` reports
 * what the kernel offers, and a confined command waits for the probe's answer.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExecdError } from '../../protocol/errors.js';
import type { SandboxBackend, SandboxBackendInfo, SandboxGuarantee, SandboxMode } from '../../protocol/sandbox.js';
import type { ExecSpec, SandboxReport } from '../../protocol/types.js';
import { ensurePrivateDir } from '../../spill/spill-file.js';
import type { TerminateOptions } from '../processes/group-signals.js';
import type { ChildSpawner } from '../executor/spawner-client.js';
import { withVariables } from '../runs/env.js';
import { bwrapArgv, isInside, PRIVATE_TMP } from './bwrap-args.js';
import { BWRAP_SIGNATURES, LANDLOCK_SIGNATURES } from './denial.js';
import { landlockAbiHere } from './landlock-abi.js';
import { landlockGuarantees, landlockLaunch, landlockPlan, landlockRefusal, probeLandlock } from './landlock-runner.js';
import type { LandlockPlan } from './landlock-rules.js';
import { enforceableModes, isConfined, type ConfinedMode } from './modes.js';
import { runProbe } from './probe-process.js';

/** The bubblewrap runner's name, as results report it. */
export const BWRAP = 'bwrap';

/** The Landlock runner's name, as results report it. */
export const LANDLOCK = 'landlock';

/** What the bubblewrap runner enforces: it also hides other processes and can cut the network. */
const BWRAP_GUARANTEES: SandboxGuarantee[] = ['files', 'daemon-files', 'daemon-socket', 'processes', 'network-off'];

/** How long the start-up probe may take before the runner counts as broken. */
const PROBE_TIMEOUT_MS = 10_000;

/** The daemon's runner, as the probe found it. */
export interface SandboxRunner {
  /** The runner in use; undefined when none works. */
  readonly backend: SandboxBackend | undefined;
  readonly bwrapPath: string;
  /** Why confined modes cannot be enforced; undefined when the runner works. */
  readonly unavailable: string | undefined;
  /** The modes `initialize` advertises. */
  readonly modes: SandboxMode[];
  /** What `initialize` and `daemon/status` report about it. */
  readonly info: SandboxBackendInfo;
}

/** A confined run's wrapped argv, how to kill it, and what its result reports. */
export interface Confinement {
  mode: ConfinedMode;
  enforcement: SandboxBackend;
  argv: string[];
  /** The environment to spawn `argv` with in place of the spec's (the Landlock launcher's). */
  env?: Record<string, string>;
  /**
   * Who spawns `argv` in place of the daemon's spawner: the session's warm confined spawner
   * (Landlock), whose children are born confined; `argv` is then the command's own.
   */
  spawner?: ChildSpawner;
  /** What a blocked access leaves on stderr under this runner. */
  denialSignatures: readonly string[];
  /** bwrap leads the group: spare it the SIGTERM so it reports the command's own status. */
  terminate: TerminateOptions;
}

/** The daemon's places a confined command must not reach, and the ones it must still read. */
export interface DaemonPlaces {
  /** The socket's and the state's directories. */
  hiddenDirs: string[];
  /** The secret files given by path (see `hidden-paths.ts`). */
  hiddenFiles: string[];
  /** The session's spill directory. */
  spillDir: string;
  /** The session's private temp dir (Landlock: its `TMPDIR`, inside the state dir); optional for other callers. */
  tempDir?: string;
}

/** Runs a bwrap with the confined layout once; resolves undefined when it works, else the reason. */
export async function probeBwrap(bwrapPath: string): Promise<string | undefined> {
  const scratch = mkdtempSync(join(tmpdir(), 'execd-probe-'));
  try {
    const hidden = join(scratch, 'hidden');
    const readable = join(hidden, 'readable');
    mkdirSync(readable, { recursive: true });
    // A secret file too: a bwrap that cannot cover one must not pass for working.
    const secret = join(scratch, 'secret');
    writeFileSync(secret, '');
    const argv = bwrapArgv(
      {
        mode: 'workspace-write',
        bwrapPath,
        workspaceRoot: scratch,
        workdir: scratch,
        hiddenDirs: [hidden],
        hiddenFiles: [secret],
        readableDirs: [readable],
        network: 'on',
      },
      ['true'],
    );
    const result = await runProbe(argv[0]!, argv.slice(1), { timeoutMs: PROBE_TIMEOUT_MS });
    if (result.exitCode === 0) return undefined;
    return result.failure ?? (result.stderr.trim() || `exit code ${result.exitCode}`);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** How the runner is chosen: the config's `sandboxBackend` and the bwrap executable. */
export interface RunnerChoice {
  backend: 'auto' | SandboxBackend;
  bwrapPath: string;
}

function runnerOf(choice: RunnerChoice, backend: SandboxBackend | undefined, info: SandboxBackendInfo): SandboxRunner {
  const unavailable = backend === undefined ? (info.unavailable ?? 'no runner') : undefined;
  return { backend, bwrapPath: choice.bwrapPath, unavailable, modes: enforceableModes(backend !== undefined), info };
}

/**
 * The daemon's runner as far as its probes have answered: `current` at once (for `initialize` and
 * `daemon/status`), `settled` once the last probe has — the runner for the daemon's whole life.
 */
export class ProbedRunner {
  private known: SandboxRunner;
  private done: boolean;
  /** The runner the last probe found; never rejects. */
  readonly settled: Promise<SandboxRunner>;

  /** `expected` stands until `proof` (the last probe, if one is still out) answers. */
  constructor(expected: SandboxRunner, proof?: Promise<SandboxRunner>) {
    this.known = expected;
    this.done = proof === undefined;
    this.settled = (proof ?? Promise.resolve(expected)).then((runner) => {
      this.known = runner;
      this.done = true;
      return runner;
    });
  }

  /** What is known now: the probe's answer once it is in, else what the kernel's answer promises. */
  get current(): SandboxRunner {
    return this.known;
  }

  /** True once no probe is out. */
  get isSettled(): boolean {
    return this.done;
  }
}

/**
 * Probes the runner(s) the choice names and resolves with the one this daemon uses for its whole
 * life: `auto` takes bubblewrap when it works and falls back to Landlock. Bubblewrap's probe is
 * waited for (one short process); Landlock's is asked of the kernel first and proven by the
 * launcher in the background.
 */
export async function createSandboxRunner(choice: RunnerChoice): Promise<ProbedRunner> {
  const reasons: string[] = [];
  const unavailable = () =>
    runnerOf(choice, undefined, { backend: null, enforces: [], unavailable: reasons.join('; ') });
  if (choice.backend !== 'landlock') {
    const broken = await probeBwrap(choice.bwrapPath).catch((error: Error) => `the probe failed: ${error.message}`);
    if (broken === undefined)
      return new ProbedRunner(runnerOf(choice, 'bwrap', { backend: 'bwrap', enforces: BWRAP_GUARANTEES }));
    reasons.push(`${BWRAP}: ${broken}`);
  }
  if (choice.backend !== 'bwrap') {
    const kernel = landlockAbiHere();
    if ('abi' in kernel) {
      const landlock = (abi: number) =>
        runnerOf(choice, 'landlock', { backend: 'landlock', enforces: landlockGuarantees(abi), landlockAbi: abi });
      const proof = probeLandlock().then(
        (probe) => {
          if ('abi' in probe) return landlock(probe.abi);
          reasons.push(`${LANDLOCK}: ${probe.unavailable}`);
          return unavailable();
        },
        (error: unknown) => {
          reasons.push(`${LANDLOCK}: the probe failed: ${(error as Error).message}`);
          return unavailable();
        },
      );
      return new ProbedRunner(landlock(kernel.abi), proof);
    }
    reasons.push(`${LANDLOCK}: ${kernel.unavailable}`);
  }
  return new ProbedRunner(unavailable());
}

/** SANDBOX_UNAVAILABLE for a confined mode this daemon cannot enforce. */
export function sandboxUnavailable(mode: SandboxMode, reason: string): ExecdError {
  return new ExecdError('SANDBOX_UNAVAILABLE', `no sandbox runner can enforce ${mode}: ${reason}`);
}

/**
 * The confinement of a spec: undefined for `danger-full-access` (runs unconfined), the wrapped
 * argv for a confined mode, or SANDBOX_UNAVAILABLE when the runner does not work (fail closed).
 * `warm`: the confined spawner of a Landlock plan; without it (terminals), the launcher wraps the
 * command.
 */
export function confine(
  runner: SandboxRunner,
  spec: ExecSpec,
  places: DaemonPlaces,
  warm?: (plan: LandlockPlan) => ChildSpawner,
): Confinement | ExecdError | undefined {
  const { mode, workspaceRoot } = spec.sandboxPolicy;
  const network = spec.sandboxPolicy.network ?? 'on';
  if (!isConfined(mode)) {
    if (network === 'off')
      return sandboxUnavailable(
        mode,
        "network 'off' is enforced by a sandbox runner, and danger-full-access runs without one",
      );
    return undefined;
  }
  if (runner.backend === undefined)
    return sandboxUnavailable(mode, `no sandbox runner works here (${runner.unavailable})`);
  if (network === 'off' && !runner.info.enforces.includes('network-off'))
    return sandboxUnavailable(
      mode,
      `network 'off' needs Landlock ABI 4 (TCP rules); this kernel has ABI ${runner.info.landlockAbi}`,
    );
  // The spill directory must exist before bwrap can bind it.
  try {
    ensurePrivateDir(places.spillDir);
  } catch (error) {
    return sandboxUnavailable(mode, `cannot create the session's spill directory: ${(error as Error).message}`);
  }
  const root = workspaceRoot ?? spec.workdir;
  const holder = hiddenHolder(root, places.hiddenDirs);
  if (holder !== undefined)
    return sandboxUnavailable(
      mode,
      `the workspace ${root} lies inside the daemon's ${holder}, which every confined command is kept out of; choose a workspace outside the state directory and the socket's directory`,
    );
  if (runner.backend === 'landlock') {
    if (places.tempDir !== undefined) {
      try {
        ensurePrivateDir(places.tempDir);
      } catch (error) {
        return sandboxUnavailable(mode, `cannot create the session's temp directory: ${(error as Error).message}`);
      }
    }
    const input = {
      mode,
      workspaceRoot: root,
      // Landlock only allows: a secret file is kept out of reach like a hidden directory, by
      // granting its siblings instead of its parent.
      hiddenDirs: [...places.hiddenDirs, ...places.hiddenFiles],
      readableDirs: [places.spillDir],
      ...(places.tempDir === undefined ? {} : { tempDir: places.tempDir }),
      network,
    };
    const refusal = landlockRefusal(input);
    if (refusal !== undefined) return sandboxUnavailable(mode, refusal);
    const plan = landlockPlan(input);
    // The session's own temp dir: the host's is not writable under Landlock (see landlockPlan).
    const env = places.tempDir === undefined ? spec.env : withVariables(spec.env, { TMPDIR: places.tempDir });
    if (warm)
      return {
        mode,
        enforcement: 'landlock',
        argv: spec.argv,
        env,
        spawner: warm(plan),
        denialSignatures: LANDLOCK_SIGNATURES,
        terminate: {},
      };
    const launch = landlockLaunch(plan, spec.argv, env);
    // The launcher execs the command in place: the shell leads the group like an unconfined one.
    return { mode, enforcement: 'landlock', ...launch, denialSignatures: LANDLOCK_SIGNATURES, terminate: {} };
  }
  const argv = bwrapArgv(
    {
      mode,
      bwrapPath: runner.bwrapPath,
      workspaceRoot: root,
      workdir: spec.workdir,
      hiddenDirs: places.hiddenDirs,
      hiddenFiles: places.hiddenFiles,
      readableDirs: [places.spillDir],
      network,
    },
    spec.argv,
  );
  return {
    mode,
    enforcement: 'bwrap',
    argv,
    // The command's private /tmp (a fresh tmpfs), whatever TMPDIR the session's environment names.
    env: withVariables(spec.env, { TMPDIR: PRIVATE_TMP }),
    denialSignatures: BWRAP_SIGNATURES,
    terminate: { spareLeaderOnTerm: true },
  };
}

/** The hidden directory `path` lies in (compared as the kernel resolves them), or undefined. */
function hiddenHolder(path: string, hiddenDirs: string[]): string | undefined {
  const real = (place: string) => {
    try {
      return realpathSync(place);
    } catch {
      return place;
    }
  };
  return hiddenDirs.find((dir) => isInside(real(path), real(dir)));
}

/** What a result reports: unconfined runs are never denied; confined ones name their runner. */
export function sandboxReport(mode: SandboxMode, confinement: Confinement | undefined, denied: boolean): SandboxReport {
  return confinement ? { mode, denied, enforcement: confinement.enforcement } : { mode, denied: false };
}
